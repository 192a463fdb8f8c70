package main

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/agent"
	"github.com/airlock-dev/airlock/backend/procgroup"
)

// The agent subcommand is the resident helper that the Docker (and later SSH) backend starts
// inside its environment. It speaks the agent protocol on stdin and stdout and reads no
// configuration, files or variables of the host: everything a command needs arrives with the
// request.
func init() {
	register(command{name: "agent", summary: "run the resident command helper (started by backends, speaks on stdin/stdout)", run: func(args []string, s stdio) int {
		fs := newFlagSet("agent", "agent [--shell SH] [--touch FILE] [--run-as UID:GID]  (started by the docker and ssh backends; speaks the helper protocol on stdin/stdout)", s)
		touch := fs.String("touch", "", "file whose mtime is set each time a command starts (a last-use mark for gc)")
		shell := fs.String("shell", "/bin/sh", "shell that runs command strings")
		runAs := fs.String("run-as", "", "UID:GID commands run as, while the helper, started as root, keeps root as its real user so that commands cannot signal it")
		buildSandbox := agentSandbox(fs)
		if code, done := parseFlags(fs, args); done {
			return code
		}
		// Commands run as the helper's own user. Not dumpable, the helper's /proc entries
		// (its stdin and stdout among them) belong to root, so a command cannot write frames
		// into the stream or read other commands' requests; commands get their own dumpable
		// state back when they exec. As a subreaper it inherits what a command's setsid
		// children leave behind and kills them when the command ends.
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
			fmt.Fprintln(s.err, "airlock agent: refusing to run dumpable:", err)
			return 1
		}
		// Commands get the same umask on every backend, not the one of whatever started the
		// helper (sshd sessions commonly run with 077).
		unix.Umask(backend.Umask)
		if err := procgroup.EnableSubreaper(); err != nil {
			fmt.Fprintln(s.err, "airlock agent: subreaper:", err)
			return 1
		}
		sb, tmp, cleanup, err := buildSandbox()
		if err != nil {
			fmt.Fprintln(s.err, "airlock agent: sandbox:", err)
			return 1
		}
		defer cleanup()
		var spawner *agent.Spawner
		if *runAs != "" {
			r, err := agent.ParseRunAs(*runAs)
			if err == nil && sb != nil {
				err = errors.New("run-as: not with a kernel sandbox")
			}
			if err == nil {
				spawner, err = r.Enter()
			}
			if err != nil {
				fmt.Fprintln(s.err, "airlock agent:", err)
				return 1
			}
		}
		prewarmThreads(agentThreads)
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		defer stop()
		if err := agent.Serve(ctx, agent.Pollable(s.in), s.out, agent.ServeOptions{Shell: *shell, TouchFile: *touch, Sandbox: sb, TempDir: tmp, Spawner: spawner}); err != nil {
			fmt.Fprintln(s.err, "airlock agent:", err)
			return 1
		}
		return 0
	}})
}

// agentThreads is how many OS threads the helper makes before it serves.
const agentThreads = 16

// prewarmThreads makes the Go runtime start n OS threads now, which it then keeps idle for
// later use. The helper shares its container's pids limit with the commands it runs: once a
// fork bomb has taken every PID, a runtime that needs one more thread dies ("failed to create
// new OS thread"), and with it every later call. Threads made up front are never given back.
func prewarmThreads(n int) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts := unix.Timespec{Nsec: 20e6}
			_ = unix.Nanosleep(&ts, nil) // a blocking syscall: the runtime hands its P to a new thread
		}()
	}
	wg.Wait()
}
