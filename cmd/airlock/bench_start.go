package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/engine"
)

// startFigures are the percentiles of one way of opening sessions, in milliseconds.
type startFigures struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	P99 float64 `json:"p99_ms"`
}

// startRow is one way of opening sessions, one at a time and in bursts.
type startRow struct {
	Sequential startFigures `json:"sequential"`
	Burst      startFigures `json:"burst"`
}

// sessionStartResult is the JSON `airlock bench --session-start --json` prints.
type sessionStartResult struct {
	Backend string `json:"backend"`
	// BurstSize sessions open at once in a burst; Pool is the warm pool's size.
	BurstSize int      `json:"burst_size"`
	Pool      int      `json:"pool,omitempty"`
	Cold      startRow `json:"cold"`
	// ColdNote says what a cold open is where it is not a session's own environment.
	ColdNote string    `json:"cold_note,omitempty"`
	Warm     *startRow `json:"warm,omitempty"`
	// WarmNote says why there is no warm row.
	WarmNote string `json:"warm_note,omitempty"`
	// Raw is the alternative without Airlock timed in the same run (RawName says what).
	RawName  string    `json:"raw,omitempty"`
	Raw      *startRow `json:"raw_figures,omitempty"`
	RawError string    `json:"raw_error,omitempty"`
}

type startBench struct {
	cfg      *configs.Config
	n, burst int
	pool     int
	pooled   backend.Pooled // nil when the backend has no warm pool
	// shared: the backend's sessions share one environment per runtime (its record is
	// not PerSession), so a cold open is that environment's start.
	shared bool
	raw    *backend.Baseline
	rawErr string
}

// runSessionStart times session open plus first command (`true` in the session's
// environment): cold, warm from the pool, and the backend's raw alternative, each one at a
// time and in bursts of concurrent sessions. The ledger goes to a temporary directory.
func runSessionStart(ctx context.Context, cfg *configs.Config, n, burst, pool int, asJSON bool, s stdio) int {
	rec, _ := backend.Lookup(cfg.Environment.Type)
	b := &startBench{cfg: cfg, n: n, burst: burst, pool: pool, shared: !rec.PerSession}
	res := sessionStartResult{Backend: cfg.Environment.Type, BurstSize: burst}
	if b.shared {
		res.ColdNote = "the sessions of one runtime share this backend's environment, so cold is the environment's own start (on local, the helper up in its namespaces), as every airlock exec, call or mcp process pays it, plus a first command"
	}
	if p, ok := cfg.Environment.Section(rec.Kind).(backend.Pooled); ok && rec.WarmPool {
		b.pooled = p
		res.Pool = pool
		p.SetPoolSize(0) // cold: a sandbox per session, as the pool's are
	} else {
		res.WarmNote = "backend " + rec.Kind + " has no warm pool"
	}
	tmp, err := os.MkdirTemp("", "airlock-bench-")
	if err != nil {
		return fail(s, err)
	}
	defer os.RemoveAll(tmp)
	cfg.Ledger.Path = filepath.Join(tmp, "receipts.jsonl")

	cold, raw, err := b.coldAndRaw(ctx)
	if err != nil {
		return fail(s, fmt.Errorf("cold: %w", err))
	}
	res.Cold = cold
	if b.raw != nil {
		res.RawName, res.Raw = b.raw.Name, raw
	} else {
		res.RawError = b.rawErr
	}
	if b.pooled != nil {
		b.pooled.SetPoolSize(pool)
		warm, err := b.warm(ctx)
		if err != nil {
			return fail(s, fmt.Errorf("warm: %w", err))
		}
		res.Warm = warm
	}
	printSessionStart(s, res, n, asJSON)
	return 0
}

func (b *startBench) engine(ctx context.Context) (*engine.Engine, error) {
	return engine.New(ctx, b.cfg, engine.WithEphemeralSessions())
}

// coldAndRaw times cold opens and the raw alternative, interleaved one by one, then in
// bursts (a burst of cold opens, then one of raw starts).
func (b *startBench) coldAndRaw(ctx context.Context) (cold startRow, raw *startRow, err error) {
	eng, err := b.engine(ctx)
	if err != nil {
		return cold, nil, err
	}
	defer closeEngine(ctx, eng)
	// A first session, untimed, pays the first-use costs and lends its environment's raw
	// alternative.
	first, _, err := openFirst(ctx, eng)
	if err != nil {
		return cold, nil, err
	}
	defer first.Close(context.WithoutCancel(ctx))
	if sb, ok := first.Environment().(backend.StartBaseliner); ok {
		if b.raw, err = sb.StartBaseline(ctx); err != nil {
			b.rawErr, b.raw = err.Error(), nil
		} else {
			defer b.raw.Close()
		}
	} else {
		b.rawErr = "the backend names no raw alternative to a session start"
	}
	open := sessionOpener(eng)
	if b.shared {
		open = b.openEnvironment
	}
	var coldT, rawT, coldB, rawB []float64
	for range b.n {
		t, err := timeOpen(ctx, open)
		if err != nil {
			return cold, nil, err
		}
		coldT = append(coldT, t)
		if b.raw != nil {
			t, err := b.timeRaw(ctx)
			if err != nil {
				return cold, nil, err
			}
			rawT = append(rawT, t)
		}
	}
	for done := 0; done < b.n; done += b.burst {
		ts, err := burstOpen(ctx, open, b.burst)
		if err != nil {
			return cold, nil, err
		}
		coldB = append(coldB, ts...)
		if b.raw != nil {
			ts, err := b.burstRaw(ctx)
			if err != nil {
				return cold, nil, err
			}
			rawB = append(rawB, ts...)
		}
	}
	cold = startRow{Sequential: figures(coldT), Burst: figures(coldB)}
	if b.raw != nil {
		raw = &startRow{Sequential: figures(rawT), Burst: figures(rawB)}
	}
	return cold, raw, nil
}

// warm times opens from a full warm pool, one by one and in bursts.
func (b *startBench) warm(ctx context.Context) (*startRow, error) {
	eng, err := b.engine(ctx)
	if err != nil {
		return nil, err
	}
	defer closeEngine(ctx, eng)
	fill := func() error {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		return eng.WaitWarmPool(wctx)
	}
	var seq, bur []float64
	open := sessionOpener(eng)
	for range b.n {
		if err := fill(); err != nil {
			return nil, err
		}
		t, err := timeOpen(ctx, open)
		if err != nil {
			return nil, err
		}
		seq = append(seq, t)
	}
	for done := 0; done < b.n; done += b.burst {
		if err := fill(); err != nil {
			return nil, err
		}
		ts, err := burstOpen(ctx, open, b.burst)
		if err != nil {
			return nil, err
		}
		bur = append(bur, ts...)
	}
	return &startRow{Sequential: figures(seq), Burst: figures(bur)}, nil
}

// openFirst opens a session and runs its first command: the time both took.
func openFirst(ctx context.Context, eng *engine.Engine) (*engine.Session, float64, error) {
	start := time.Now()
	sess, err := eng.Session(ctx, "")
	if err != nil {
		return nil, 0, err
	}
	res, err := sess.Environment().Exec(ctx, backend.Request{Command: "true"})
	took := ms(time.Since(start))
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("true exited %d: %s", res.ExitCode, res.Stderr)
	}
	if err != nil {
		return nil, 0, errors.Join(err, sess.Close(context.WithoutCancel(ctx)))
	}
	return sess, took, nil
}

// opener opens a session (or an environment) and runs its first command: the time both
// took, and what closes it, untimed.
type opener func(ctx context.Context) (closeIt func() error, took float64, err error)

// sessionOpener opens sessions of eng (openFirst).
func sessionOpener(eng *engine.Engine) opener {
	return func(ctx context.Context) (func() error, float64, error) {
		sess, t, err := openFirst(ctx, eng)
		if err != nil {
			return nil, 0, err
		}
		return func() error { return sess.Close(context.WithoutCancel(ctx)) }, t, nil
	}
}

// openEnvironment opens the configured backend's environment on its own, as a runtime does
// once, and runs its first command.
func (b *startBench) openEnvironment(ctx context.Context) (func() error, float64, error) {
	start := time.Now()
	env, err := engine.OpenEnvironment(ctx, b.cfg, "", nil)
	if err != nil {
		return nil, 0, err
	}
	closeIt := func() error { return env.Close(context.WithoutCancel(ctx)) }
	res, err := env.Exec(ctx, backend.Request{Command: "true"})
	took := ms(time.Since(start))
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("true exited %d: %s", res.ExitCode, res.Stderr)
	}
	if err != nil {
		return nil, 0, errors.Join(err, closeIt())
	}
	return closeIt, took, nil
}

// timeOpen opens one with the session closed after, untimed.
func timeOpen(ctx context.Context, open opener) (float64, error) {
	closeIt, t, err := open(ctx)
	if err != nil {
		return 0, err
	}
	return t, closeIt()
}

// burstOpen opens n sessions at once; they are closed, untimed, when all are open.
func burstOpen(ctx context.Context, open opener, n int) ([]float64, error) {
	times := make([]float64, n)
	closers := make([]func() error, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			closers[i], times[i], errs[i] = open(ctx)
		}()
	}
	close(start)
	wg.Wait()
	for _, c := range closers {
		if c != nil {
			errs = append(errs, c())
		}
	}
	return times, errors.Join(errs...)
}

func (b *startBench) timeRaw(ctx context.Context) (float64, error) {
	start := time.Now()
	err := b.raw.Run(ctx)
	took := ms(time.Since(start))
	return took, errors.Join(err, b.reset(ctx))
}

func (b *startBench) burstRaw(ctx context.Context) ([]float64, error) {
	times := make([]float64, b.burst)
	errs := make([]error, b.burst)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range b.burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			t0 := time.Now()
			errs[i] = b.raw.Run(ctx)
			times[i] = ms(time.Since(t0))
		}()
	}
	close(start)
	wg.Wait()
	return times, errors.Join(append(errs, b.reset(ctx))...)
}

func (b *startBench) reset(ctx context.Context) error {
	if b.raw.Reset == nil {
		return nil
	}
	return b.raw.Reset(context.WithoutCancel(ctx))
}

func closeEngine(ctx context.Context, eng *engine.Engine) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	_ = eng.Close(cctx)
}

func figures(ts []float64) startFigures {
	sorted := append([]float64(nil), ts...)
	sort.Float64s(sorted)
	return startFigures{N: len(ts), P50: percentile(sorted, 50), P90: percentile(sorted, 90), P99: percentile(sorted, 99)}
}

func printSessionStart(s stdio, r sessionStartResult, n int, asJSON bool) {
	if asJSON {
		out, _ := json.Marshal(r)
		fmt.Fprintln(s.out, string(out))
		return
	}
	row := func(name string, f startFigures) {
		fmt.Fprintf(s.out, "  %-34s p50 %9.2f ms   p90 %9.2f ms   p99 %9.2f ms   (n=%d)\n", name, f.P50, f.P90, f.P99, f.N)
	}
	pool := ""
	if r.Warm != nil {
		pool = fmt.Sprintf(", warm pool of %d", r.Pool)
	}
	fmt.Fprintf(s.out, "%s: session open + first command (true), %d sequential and in bursts of %d%s\n", r.Backend, n, r.BurstSize, pool)
	burst := fmt.Sprintf("burst of %d", r.BurstSize)
	if r.ColdNote != "" {
		fmt.Fprintf(s.out, "  (%s)\n", r.ColdNote)
	}
	row("cold, sequential", r.Cold.Sequential)
	row("cold, "+burst, r.Cold.Burst)
	if r.Warm != nil {
		row("warm, sequential", r.Warm.Sequential)
		row("warm, "+burst, r.Warm.Burst)
	} else {
		fmt.Fprintf(s.out, "  warm: not timed: %s\n", r.WarmNote)
	}
	if r.Raw == nil {
		fmt.Fprintf(s.out, "  raw alternative: not timed: %s\n", r.RawError)
		return
	}
	fmt.Fprintf(s.out, "  same run, without Airlock: %s\n", r.RawName)
	row("raw, sequential", r.Raw.Sequential)
	row("raw, "+burst, r.Raw.Burst)
	ratio := func(a, b float64) float64 { return math.Round(a/max(b, 0.001)*100) / 100 }
	fmt.Fprintf(s.out, "  p50 ratios to raw: cold %.2f (burst %.2f)", ratio(r.Cold.Sequential.P50, r.Raw.Sequential.P50), ratio(r.Cold.Burst.P50, r.Raw.Burst.P50))
	if r.Warm != nil {
		fmt.Fprintf(s.out, ", warm %.2f (burst %.2f)", ratio(r.Warm.Sequential.P50, r.Raw.Sequential.P50), ratio(r.Warm.Burst.P50, r.Raw.Burst.P50))
	}
	fmt.Fprintln(s.out)
}
