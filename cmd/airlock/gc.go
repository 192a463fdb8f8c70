package main

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/configs"
)

func init() {
	register(command{name: "gc", summary: "remove Airlock containers whose session is gone or whose idle TTL passed", run: runGC})
}

func runGC(args []string, s stdio) int {
	fs := newFlagSet("gc", "gc [--all] [--all-owners] [--dry-run] [--min-age D] [--config FILE]", s)
	all := fs.Bool("all", false, "remove every Airlock container, in use or not")
	allOwners := fs.Bool("all-owners", false, "look at every user's containers, not only those this user created on this host")
	dryRun := fs.Bool("dry-run", false, "list what would be removed, remove nothing")
	configFile := fs.String("config", "", "config file naming the daemon (environment.docker.host; default: DOCKER_HOST)")
	minAge := fs.Duration("min-age", time.Minute, "spare stopped containers younger than this (one may be starting)")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	cfg, err := configs.Load(*configFile)
	if err != nil {
		return fail(s, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	items, err := docker.GC(ctx, docker.GCOptions{
		Host: cfg.Environment.Docker.Host, All: *all, DryRun: *dryRun, MinAge: *minAge, AllOwners: *allOwners,
	})
	if err != nil {
		return fail(s, err)
	}
	failed, acted, others := false, 0, 0
	for _, it := range items {
		if it.OtherOwner != "" {
			others++
			continue
		}
		acted++
		switch {
		case *dryRun:
			fmt.Fprintf(s.out, "would remove %s %s: %s\n", shortContainerID(it.ID), it.Name, it.Reason)
		case it.Err != nil:
			failed = true
			fmt.Fprintf(s.err, "airlock gc: %s %s: %v\n", shortContainerID(it.ID), it.Name, it.Err)
		default:
			fmt.Fprintf(s.out, "removed %s %s: %s\n", shortContainerID(it.ID), it.Name, it.Reason)
		}
	}
	if acted == 0 {
		fmt.Fprintln(s.out, "nothing to remove")
	}
	if others > 0 {
		fmt.Fprintf(s.out, "left alone %d container(s) of other users or hosts (--all-owners to include them)\n", others)
	}
	if failed {
		return 1
	}
	return 0
}

func shortContainerID(id string) string { return id[:min(len(id), 12)] }
