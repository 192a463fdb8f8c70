package main

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"syscall"
)

// roundTripper is an environment that can time a message to its host and back with nothing
// run (the SSH backend's keepalive).
type roundTripper interface {
	RoundTrip(ctx context.Context) error
}

// startIdle starts n idle processes (sleep) that are not children of this process — as the
// other processes of a busy host are not — in one process group of their own, and returns
// the function that kills them. It must run before anything makes this process a subreaper,
// or the sleeps would be handed to it.
func startIdle(n int) (stop func(), err error) {
	if n <= 0 {
		return func() {}, nil
	}
	// The shell leads a new session and group; its sleeps stay in the group, and when it
	// exits they are re-parented away from us.
	script := `i=0; while [ "$i" -lt "$1" ]; do sleep 3600 </dev/null >/dev/null 2>&1 & i=$((i+1)); done`
	cmd := exec.Command("/bin/sh", "-c", script, "sh", strconv.Itoa(n))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("start %d idle processes: %w", n, err)
	}
	pgid := cmd.Process.Pid
	return func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }, nil
}
