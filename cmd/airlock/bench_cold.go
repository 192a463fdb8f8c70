package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"time"

	"github.com/airlock-dev/airlock/backend/procgroup"
)

// coldExecResult is the JSON `airlock bench --cold-exec --json` prints.
type coldExecResult struct {
	Backend string `json:"backend"`
	N       int    `json:"n"`
	againstRaw
}

// runColdExec times `airlock exec -- true` run as a process of its own, from its start to
// its exit: the whole command line — the program's start, the config, the runtime, the
// ledger, the session and its environment (for the local backend, the helper), the call
// and its receipts — interleaved with the raw alternative, a fork/exec of sh -c true. The
// ledger goes to a temporary state directory (XDG_STATE_HOME) unless the config names one.
func runColdExec(ctx context.Context, backendKind, configFile string, n int, asJSON bool, s stdio) int {
	exe, err := os.Executable()
	if err != nil {
		return fail(s, err)
	}
	state, err := os.MkdirTemp("", "airlock-bench-state-")
	if err != nil {
		return fail(s, err)
	}
	defer os.RemoveAll(state)
	args := []string{"exec"}
	if configFile != "" {
		args = append(args, "--config", configFile)
	}
	args = append(args, "--", "true")
	env := append(os.Environ(), "XDG_STATE_HOME="+state)
	cold := func() (float64, error) {
		var stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Env, cmd.Stderr = env, &stderr
		start := time.Now()
		err := cmd.Run()
		took := ms(time.Since(start))
		if err != nil {
			return 0, fmt.Errorf("airlock exec -- true: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
		}
		return took, nil
	}
	if _, err := cold(); err != nil { // warm-up: the ledger is made, the binary is in the page cache
		return fail(s, err)
	}
	times := make([]float64, 0, n)
	raw := make([]float64, 0, n)
	for range n {
		t, err := cold()
		if err != nil {
			return fail(s, err)
		}
		times = append(times, t)
		// Interleaved, so that whatever else the machine does weighs on both alike.
		r, err := procgroup.TimeForkExec()
		if err != nil {
			return fail(s, fmt.Errorf("raw fork/exec: %w", err))
		}
		raw = append(raw, ms(r))
	}
	sort.Float64s(times)
	sort.Float64s(raw)
	r := coldExecResult{Backend: backendKind, N: n, againstRaw: againstRawOf(times, raw, "fork/exec of sh -c true")}
	if asJSON {
		out, _ := json.Marshal(r)
		fmt.Fprintln(s.out, string(out))
		return 0
	}
	fmt.Fprintf(s.out, "%s: airlock exec -- true as a new process, %d runs: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms\n", r.Backend, r.N, r.P50, r.P90, r.P99)
	r.printRaw(s)
	return 0
}
