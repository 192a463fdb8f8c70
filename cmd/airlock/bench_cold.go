package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"sort"
	"time"

	"github.com/airlock-dev/airlock/backend/procgroup"
)

// coldExecResult is the JSON `airlock bench --cold-exec --json` prints.
type coldExecResult struct {
	Backend string  `json:"backend"`
	N       int     `json:"n"`
	P50     float64 `json:"p50_ms"`
	P90     float64 `json:"p90_ms"`
	P99     float64 `json:"p99_ms"`
	Raw     string  `json:"raw"`
	RawP50  float64 `json:"raw_p50_ms"`
	RawP90  float64 `json:"raw_p90_ms"`
	RawP99  float64 `json:"raw_p99_ms"`
	Ratio   float64 `json:"ratio_p50"`
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
	r := coldExecResult{Backend: backendKind, N: n, Raw: "fork/exec of sh -c true",
		P50: percentile(times, 50), P90: percentile(times, 90), P99: percentile(times, 99),
		RawP50: percentile(raw, 50), RawP90: percentile(raw, 90), RawP99: percentile(raw, 99)}
	r.Ratio = math.Round(r.P50/max(r.RawP50, 0.001)*100) / 100
	if asJSON {
		out, _ := json.Marshal(r)
		fmt.Fprintln(s.out, string(out))
		return 0
	}
	fmt.Fprintf(s.out, "%s: airlock exec -- true as a new process, %d runs: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms\n", r.Backend, r.N, r.P50, r.P90, r.P99)
	fmt.Fprintf(s.out, "  without Airlock, same run (%s): p50 %.2f ms, p90 %.2f ms, p99 %.2f ms; ratio at p50 %.2f\n", r.Raw, r.RawP50, r.RawP90, r.RawP99, r.Ratio)
	return 0
}
