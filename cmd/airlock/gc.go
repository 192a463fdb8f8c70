package main

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/backend"
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
	configFile := fs.String("config", "", "config file whose backend sections say where to look (a container daemon's address, …)")
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
	// Every backend that leaves something behind collects it, from its own section of the
	// config (the daemon address, for Docker). One that cannot be reached does not keep the
	// others from collecting: it is said, and fails the run only when it is the configured
	// backend.
	var items []backend.GCItem
	failed := false
	for _, rec := range backend.Records() {
		if rec.GC == nil {
			continue
		}
		got, err := rec.GC(ctx, cfg.Environment.Section(rec.Kind), backend.GCOptions{All: *all, DryRun: *dryRun, MinAge: *minAge, AllOwners: *allOwners})
		switch {
		case err != nil && rec.Kind == cfg.Environment.Type:
			failed = true
			fmt.Fprintf(s.err, "airlock gc: %s: %v\n", rec.Kind, err)
		case err != nil:
			fmt.Fprintf(s.err, "airlock gc: skipped %s (not the configured backend): %v\n", rec.Kind, err)
		}
		items = append(items, got...)
	}
	acted, others := 0, 0
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
