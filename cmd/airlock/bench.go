package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/procgroup"
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/engine"
)

func init() {
	register(command{name: "bench", summary: "measure the round trip of a trivial command through an environment", run: runBench})
}

// benchResult is the JSON that `airlock bench --json` prints; tests outside the repository
// rely on its fields.
type benchResult struct {
	Backend string `json:"backend"`
	Mode    string `json:"mode"`
	N       int    `json:"n"`
	// The commands' percentiles and the raw alternative's: a fork/exec of sh -c true, plus
	// for SSH a round trip to the host on the same connection.
	againstRaw
	// Baseline is the raw alternative the backend stands in for — the docker CLI's exec,
	// OpenSSH's ControlMaster — timed in the same run against the same target.
	Baseline *benchBaseline `json:"baseline,omitempty"`
	// Idle is how many idle processes the run started on this host first (--idle).
	Idle int `json:"idle,omitempty"`
	// Notes are the environment's own (Describe): above all, why it fell back from a faster
	// mode.
	Notes []string `json:"notes,omitempty"`
	// RoundTrip (--parts) is a file read of a missing file through the environment, timed
	// interleaved with the commands: a message to where commands start (the helper) and
	// back with one failed open in between. A command's share beyond the raw fork/exec is
	// this plus what starting it costs there.
	RoundTrip *benchSeries `json:"round_trip,omitempty"`
	// Host is what this host is, for figures from another one.
	Host benchHost `json:"host"`
}

// benchSeries is one more timed series and what it is.
type benchSeries struct {
	Name string  `json:"name"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
}

// benchHost is what the host that timed is: its processors and kernel, and the kernel's
// speculation mitigations, which decide what a command under seccomp pays at each switch.
type benchHost struct {
	Arch   string `json:"arch"`
	CPUs   int    `json:"cpus"`
	Procs  int    `json:"gomaxprocs"`
	Kernel string `json:"kernel"`
	// SpecStoreBypass and SpectreV2 are the kernel's lines for them in
	// /sys/devices/system/cpu/vulnerabilities.
	SpecStoreBypass string `json:"spec_store_bypass,omitempty"`
	SpectreV2       string `json:"spectre_v2,omitempty"`
}

func hostOf() benchHost {
	h := benchHost{Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), Procs: runtime.GOMAXPROCS(0)}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	const vuln = "/sys/devices/system/cpu/vulnerabilities/"
	h.SpecStoreBypass, h.SpectreV2 = sysfsLine(vuln+"spec_store_bypass"), sysfsLine(vuln+"spectre_v2")
	return h
}

// sysfsLine is the file's content without surrounding space, or "" when it cannot be read.
func sysfsLine(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// benchOpts are bench's flags.
type benchOpts struct {
	kind, mode, configFile                   string
	n, idle, burst, pool                     int
	asJSON, baseline, coldExec, sessionStart bool
	readBatch, parts                         bool
}

// parseBenchFlags reads bench's flags and checks their ranges; done says bench should end
// with code (help, or a bad flag).
func parseBenchFlags(args []string, s stdio) (o benchOpts, code int, done bool) {
	fs := newFlagSet("bench", "bench --backend "+strings.Join(backend.Kinds(), "|")+" [--n N] [--json] [--mode MODE] [--config FILE] [--session-start [--burst N] [--pool N] | --cold-exec]", s)
	fs.StringVar(&o.kind, "backend", "", "backend to measure (default: the config's environment.type)")
	fs.IntVar(&o.n, "n", 100, "commands to time")
	fs.BoolVar(&o.asJSON, "json", false, "print one JSON object")
	fs.StringVar(&o.mode, "mode", "", "how the backend starts commands, for backends with modes ("+benchModesHelp()+")")
	fs.StringVar(&o.configFile, "config", "", "config file (default: airlock.toml if present, else defaults)")
	fs.BoolVar(&o.baseline, "baseline", true, "also time the raw alternative the backend stands in for (the CLI a container backend replaces, OpenSSH ControlMaster), in the same run")
	fs.IntVar(&o.idle, "idle", 0, "start this many idle processes on this host first (killed after), as on a busy machine")
	fs.BoolVar(&o.coldExec, "cold-exec", false, "time airlock exec -- true as a new process instead (the config's backend; --n defaults to 20)")
	fs.BoolVar(&o.sessionStart, "session-start", false, "time session open plus first command instead: cold, from a warm pool, and the backend's raw alternative, sequential and in bursts (--n defaults to 20)")
	fs.BoolVar(&o.readBatch, "read-batch", false, fmt.Sprintf("time one batch of --n read_file calls (default %d) through airlock call as a new process in a temporary workspace of %d files instead: its wall time and peak RSS, beside os.ReadFile of the same files in a loop", readBatchDefaultN, readBatchFiles))
	fs.BoolVar(&o.parts, "parts", false, "also time, interleaved, a round trip to where commands start (a file read of a missing file), to split a command's share beyond the raw fork/exec")
	fs.IntVar(&o.burst, "burst", 10, "with --session-start: sessions opened at once in a burst")
	fs.IntVar(&o.pool, "pool", 0, fmt.Sprintf("with --session-start: warm pool size, 1 to %d (default: --burst)", backend.MaxWarmPool))
	if code, done := parseFlags(fs, args); done {
		return o, code, true
	}
	if (o.sessionStart || o.coldExec) && !flagSet(fs, "n") {
		o.n = 20
	}
	if o.readBatch && !flagSet(fs, "n") {
		o.n = readBatchDefaultN
	}
	if o.pool == 0 {
		o.pool = o.burst
	}
	switch {
	case o.n < 1:
		return o, fail(s, errors.New("--n must be at least 1")), true
	case o.burst < 1:
		return o, fail(s, errors.New("--burst must be at least 1")), true
	case o.pool < 1 || o.pool > backend.MaxWarmPool:
		return o, fail(s, fmt.Errorf("--pool: want 1 to %d", backend.MaxWarmPool)), true
	case o.readBatch && (o.sessionStart || o.coldExec):
		return o, fail(s, errors.New("--read-batch: not with --session-start or --cold-exec")), true
	case o.readBatch && (o.kind != "" && o.kind != "local" || o.mode != "" || o.configFile != "" || o.idle != 0):
		return o, fail(s, errors.New("--read-batch runs the local backend in a workspace of its own: no --backend, --mode, --config or --idle")), true
	}
	return o, 0, false
}

func runBench(args []string, s stdio) int {
	o, code, done := parseBenchFlags(args, s)
	if done {
		return code
	}
	if o.readBatch {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return runReadBatch(ctx, o.n, o.asJSON, s)
	}
	cfg, err := configs.Load(o.configFile)
	if err != nil {
		return fail(s, err)
	}
	if o.coldExec {
		if o.kind != "" && o.kind != cfg.Environment.Type {
			return fail(s, fmt.Errorf("--cold-exec runs airlock exec with the config as it is: its backend is %q, not %q", cfg.Environment.Type, o.kind))
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return runColdExec(ctx, cfg.Environment.Type, o.configFile, o.n, o.asJSON, s)
	}
	if o.kind != "" {
		cfg.Environment.Type = o.kind
	}
	// --mode is the backend's own: its record says which it has.
	if rec, ok := backend.Lookup(cfg.Environment.Type); ok && rec.SetMode != nil {
		if err := rec.SetMode(cfg.Environment.Section(rec.Kind), o.mode); err != nil {
			return fail(s, fmt.Errorf("--mode: %w", err))
		}
	} else if o.mode != "" {
		return fail(s, fmt.Errorf("--mode: backend %q has no modes", cfg.Environment.Type))
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if o.sessionStart {
		return runSessionStart(ctx, cfg, o.n, o.burst, o.pool, o.asJSON, s)
	}
	// Before the environment is opened: the local backend makes this process a subreaper,
	// which would adopt the idle processes.
	stopIdle, err := startIdle(o.idle)
	if err != nil {
		return fail(s, err)
	}
	defer stopIdle()
	env, err := engine.OpenEnvironment(ctx, cfg, "", hclog.NewNullLogger())
	if err != nil {
		return fail(s, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = env.Close(cctx)
	}()
	return benchEnv(ctx, env, o, s)
}

// benchEnv times commands through env, and what o asks for beside them, and prints it.
func benchEnv(ctx context.Context, env backend.Environment, o benchOpts, s stdio) int {
	d := env.Describe()
	if o.mode != "" && d.Mode != backend.CanonicalMode(o.mode) {
		fmt.Fprintf(s.err, "airlock bench: asked for mode %q, running in %q: %s\n", o.mode, d.Mode, strings.Join(d.Notes, "; "))
	}

	var probe func(context.Context) error
	if o.parts {
		if probe = fileProbe(env); probe == nil {
			return fail(s, fmt.Errorf("--parts: the %s environment has no file operations to time", d.Kind))
		}
	}
	t, err := timeCommands(ctx, env, o.n, probe)
	if err != nil {
		return fail(s, err)
	}
	rawName := "fork/exec of sh -c true"
	if _, ok := env.(roundTripper); ok {
		rawName += " + a round trip to the host"
	}
	r := benchResult{Backend: d.Kind, Mode: d.Mode, N: o.n, Idle: o.idle, Notes: d.Notes,
		againstRaw: againstRawOf(t.cmd, t.raw, rawName), Host: hostOf()}
	if probe != nil {
		r.RoundTrip = &benchSeries{Name: "read of a missing file through the environment",
			P50: percentile(t.probe, 50), P90: percentile(t.probe, 90), P99: percentile(t.probe, 99)}
	}
	if o.baseline {
		r.Baseline = timeBaseline(ctx, env, o.n)
	}
	if o.asJSON {
		out, _ := json.Marshal(r)
		fmt.Fprintln(s.out, string(out))
		return 0
	}
	printBench(s, r)
	return 0
}

// timed are timeCommands' series, each sorted.
type timed struct{ cmd, raw, probe []float64 }

// timeCommands times n runs of the command a terminal call runs (`true`, through the
// environment's shell) after a warm-up. Where there is a raw alternative — a fork/exec of the
// same shell command on this host, plus a round trip to the host for a remote environment —
// it is timed interleaved with them, so that whatever else the machine does weighs on both
// alike; raw is nil where there is none. probe, when not nil, is timed interleaved too.
func timeCommands(ctx context.Context, env backend.Environment, n int, probe func(context.Context) error) (t timed, err error) {
	req := backend.Request{Command: "true"}
	if _, err := env.Exec(ctx, req); err != nil { // warm-up: first-use costs are not the round trip
		return t, err
	}
	rt, _ := env.(roundTripper)
	raw := env.Describe().Kind == "local" || rt != nil
	t.cmd = make([]float64, 0, n)
	for range n {
		start := time.Now()
		res, err := env.Exec(ctx, req)
		if err != nil {
			return t, err
		}
		if res.ExitCode != 0 {
			return t, fmt.Errorf("true exited %d: %s", res.ExitCode, res.Stderr)
		}
		t.cmd = append(t.cmd, ms(time.Since(start)))
		if probe != nil {
			start := time.Now()
			if err := probe(ctx); err != nil {
				return t, err
			}
			t.probe = append(t.probe, ms(time.Since(start)))
		}
		if !raw {
			continue
		}
		took, err := rawRun(ctx, rt)
		if err != nil {
			return t, err
		}
		t.raw = append(t.raw, ms(took))
	}
	for _, s := range [][]float64{t.cmd, t.raw, t.probe} {
		sort.Float64s(s)
	}
	return t, nil
}

// rawRun times the raw alternative once: a fork/exec of sh -c true, and a round trip to
// the host when rt is not nil.
func rawRun(ctx context.Context, rt roundTripper) (time.Duration, error) {
	took, err := procgroup.TimeForkExec()
	if err != nil {
		return 0, fmt.Errorf("raw fork/exec: %w", err)
	}
	if rt != nil {
		start := time.Now()
		if err := rt.RoundTrip(ctx); err != nil {
			return 0, err
		}
		took += time.Since(start)
	}
	return took, nil
}

// fileProbe is a read of a missing file beneath the workspace through env's file
// operations, answered not_found; nil when env has none.
func fileProbe(env backend.Environment) func(context.Context) error {
	ops, ok := env.(backend.FileOps)
	if !ok {
		return nil
	}
	ws := env.Describe().Workspace
	req := backend.FileRequest{Op: backend.FileRead, Root: ws, Path: path.Join(ws, ".airlock-bench-absent"), MaxBytes: 1}
	return func(ctx context.Context) error {
		_, err := ops.FileOp(ctx, req)
		var fe *backend.FileError
		if errors.As(err, &fe) && fe.Code == backend.FileNotFound {
			return nil
		}
		return fmt.Errorf("--parts: a read of missing %s: want not_found, got %v", req.Path, err)
	}
}

// printBench prints r for a person.
func printBench(s stdio, r benchResult) {
	idleNote := ""
	if r.Idle > 0 {
		idleNote = fmt.Sprintf(", %d idle processes on the host", r.Idle)
	}
	fmt.Fprintf(s.out, "%s (%s), %d runs of sh -c true%s: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms\n", r.Backend, r.Mode, r.N, idleNote, r.P50, r.P90, r.P99)
	r.printRaw(s)
	if t := r.RoundTrip; t != nil {
		fmt.Fprintf(s.out, "  same run, %s: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms\n", t.Name, t.P50, t.P90, t.P99)
	}
	if b := r.Baseline; b != nil && b.Error != "" {
		fmt.Fprintf(s.out, "  same run, %s: not timed: %s\n", b.Name, b.Error)
	} else if b != nil {
		fmt.Fprintf(s.out, "  same run, %s: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms (%.1fx the p50 above)\n", b.Name, b.P50, b.P90, b.P99, b.P50/max(r.P50, 0.001))
	}
	for _, note := range r.Notes {
		fmt.Fprintf(s.out, "  note: %s\n", note)
	}
}

// benchBaseline is the raw alternative's figures, or why it could not be timed.
type benchBaseline struct {
	Name  string  `json:"name"`
	P50   float64 `json:"p50_ms,omitempty"`
	P90   float64 `json:"p90_ms,omitempty"`
	P99   float64 `json:"p99_ms,omitempty"`
	Error string  `json:"error,omitempty"`
}

// timeBaseline times the raw alternative the environment stands in for, when it names one
// ([backend.Baseliner]).
func timeBaseline(ctx context.Context, env backend.Environment, n int) *benchBaseline {
	bl, ok := env.(backend.Baseliner)
	if !ok {
		return nil
	}
	b, err := bl.Baseline(ctx)
	if err != nil {
		return &benchBaseline{Name: "raw alternative", Error: err.Error()}
	}
	defer b.Close()
	out := &benchBaseline{Name: b.Name}
	if err := b.Run(ctx); err != nil { // warm-up
		out.Error = err.Error()
		return out
	}
	times := make([]float64, 0, n)
	for range n {
		start := time.Now()
		if err := b.Run(ctx); err != nil {
			out.Error = err.Error()
			return out
		}
		times = append(times, ms(time.Since(start)))
	}
	sort.Float64s(times)
	out.P50, out.P90, out.P99 = percentile(times, 50), percentile(times, 90), percentile(times, 99)
	return out
}

// againstRaw is a timed series beside the raw alternative timed in the same run,
// interleaved with it.
type againstRaw struct {
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	P99 float64 `json:"p99_ms"`
	// Raw names what the same work costs without Airlock; RawP50 etc. are its percentiles
	// and Ratio is P50/RawP50.
	Raw    string  `json:"raw,omitempty"`
	RawP50 float64 `json:"raw_p50_ms,omitempty"`
	RawP90 float64 `json:"raw_p90_ms,omitempty"`
	RawP99 float64 `json:"raw_p99_ms,omitempty"`
	Ratio  float64 `json:"ratio_p50,omitempty"`
}

// againstRawOf takes the percentiles of sorted times and, when there are any, of the
// sorted raw times, named rawName.
func againstRawOf(times, raw []float64, rawName string) againstRaw {
	a := againstRaw{P50: percentile(times, 50), P90: percentile(times, 90), P99: percentile(times, 99)}
	if len(raw) == 0 {
		return a
	}
	a.Raw = rawName
	a.RawP50, a.RawP90, a.RawP99 = percentile(raw, 50), percentile(raw, 90), percentile(raw, 99)
	if a.RawP50 > 0 {
		a.Ratio = math.Round(a.P50/a.RawP50*100) / 100
	}
	return a
}

// printRaw prints the raw alternative's line, if it was timed.
func (a againstRaw) printRaw(s stdio) {
	if a.Raw != "" {
		fmt.Fprintf(s.out, "  without Airlock, same run (%s): p50 %.2f ms, p90 %.2f ms, p99 %.2f ms; ratio at p50 %.2f\n", a.Raw, a.RawP50, a.RawP90, a.RawP99, a.Ratio)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// percentile of sorted values, nearest rank.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return math.Round(sorted[max(0, min(i, len(sorted)-1))]*1000) / 1000
}

// flagSet reports whether the command line set the flag.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// benchModesHelp lists each backend's modes, from the records.
func benchModesHelp() string {
	var parts []string
	for _, r := range backend.Records() {
		if len(r.Modes) > 0 {
			parts = append(parts, r.Kind+": "+strings.Join(r.Modes, "|"))
		}
	}
	return strings.Join(parts, "; ")
}
