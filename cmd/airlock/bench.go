package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/ssh"
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/engine"
)

func init() {
	register(command{name: "bench", summary: "measure the round trip of a trivial command through an environment", run: runBench})
}

// benchModes applies --mode to a config, per backend. A backend without modes is absent; a
// new backend adds a line.
var benchModes = map[string]func(cfg *configs.Config, mode string) error{
	"docker": func(cfg *configs.Config, mode string) error {
		switch mode {
		case "", docker.ModeAgent:
			cfg.Environment.Docker.Agent = docker.AgentAuto
		case docker.ModeExec:
			cfg.Environment.Docker.Agent = docker.AgentOff
		default:
			return fmt.Errorf("--mode %q: want agent or exec", mode)
		}
		return nil
	},
	"ssh": func(cfg *configs.Config, mode string) error {
		switch mode {
		case "", ssh.ModeAgent:
			cfg.Environment.SSH.Mode = ssh.ModeAuto
		case ssh.ModeSession, "exec":
			cfg.Environment.SSH.Mode = ssh.ModeSession
		default:
			return fmt.Errorf("--mode %q: want agent or session", mode)
		}
		return nil
	},
}

// benchResult is the JSON that `airlock bench --json` prints; tests outside the repository
// rely on its fields.
type benchResult struct {
	Backend string  `json:"backend"`
	Mode    string  `json:"mode"`
	N       int     `json:"n"`
	P50     float64 `json:"p50_ms"`
	P90     float64 `json:"p90_ms"`
	P99     float64 `json:"p99_ms"`
}

func runBench(args []string, s stdio) int {
	fs := newFlagSet("bench", "bench --backend local|docker|ssh [--n N] [--json] [--mode agent|exec|session] [--config FILE]", s)
	kind := fs.String("backend", "", "backend to measure (default: the config's environment.type)")
	n := fs.Int("n", 100, "commands to time")
	asJSON := fs.Bool("json", false, "print one JSON object")
	mode := fs.String("mode", "", "how the backend starts commands, for backends with modes (docker: agent|exec; ssh: agent|session)")
	configFile := fs.String("config", "", "config file (default: airlock.toml if present, else defaults)")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if *n < 1 {
		return fail(s, errors.New("--n must be at least 1"))
	}
	cfg, err := configs.Load(*configFile)
	if err != nil {
		return fail(s, err)
	}
	if *kind != "" {
		cfg.Environment.Type = *kind
	}
	if apply, ok := benchModes[cfg.Environment.Type]; ok {
		if err := apply(cfg, *mode); err != nil {
			return fail(s, err)
		}
	} else if *mode != "" {
		return fail(s, fmt.Errorf("--mode: backend %q has no modes", cfg.Environment.Type))
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	env, err := engine.OpenEnvironment(ctx, cfg, "", hclog.NewNullLogger())
	if err != nil {
		return fail(s, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = env.Close(cctx)
	}()
	d := env.Describe()
	if *mode != "" && d.Mode != *mode {
		fmt.Fprintf(s.err, "airlock bench: asked for mode %q, running in %q: %s\n", *mode, d.Mode, strings.Join(d.Notes, "; "))
	}

	req := backend.Request{Argv: []string{"true"}}
	if _, err := env.Exec(ctx, req); err != nil { // warm-up: first-use costs are not the round trip
		return fail(s, err)
	}
	times := make([]float64, 0, *n)
	for range *n {
		start := time.Now()
		res, err := env.Exec(ctx, req)
		if err != nil {
			return fail(s, err)
		}
		if res.ExitCode != 0 {
			return fail(s, fmt.Errorf("true exited %d: %s", res.ExitCode, res.Stderr))
		}
		times = append(times, float64(time.Since(start).Microseconds())/1000)
	}
	sort.Float64s(times)
	r := benchResult{Backend: d.Kind, Mode: d.Mode, N: *n,
		P50: percentile(times, 50), P90: percentile(times, 90), P99: percentile(times, 99)}
	if *asJSON {
		out, _ := json.Marshal(r)
		fmt.Fprintln(s.out, string(out))
		return 0
	}
	fmt.Fprintf(s.out, "%s (%s), %d runs of true: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms\n", r.Backend, r.Mode, r.N, r.P50, r.P90, r.P99)
	return 0
}

// percentile of sorted values, nearest rank.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return math.Round(sorted[max(0, min(i, len(sorted)-1))]*1000) / 1000
}
