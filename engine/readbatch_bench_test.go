package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/receipt"
)

// BenchmarkReadFileBatch runs 10,000 read_file calls in one batch on the local backend as
// configured by default, through the whole pipeline (policy with its resolve step, receipts,
// the file tool), taking each result as it is released and keeping none, as `airlock call`
// does (Session.RunBatchFunc), and reports the batch's wall time and the largest resident set of this
// process (Airlock) and of its children (the helper, and what it ran), and of this process's
// anonymous memory alone (MiB-anon-airlock: what the batch costs; the resident set also
// counts the test binary's own pages, most of it). Beside it, raw-s is
// the raw alternative timed in the same run: the same 10,000 files read with os.ReadFile in
// a loop, no policy, receipt or sandbox.
//
//	go test -run x -bench ReadFileBatch -benchtime 1x ./engine/
//
// AIRLOCK_BENCH_LEDGER=one-at-a-time appends every ledger line alone (no group commit): run
// both, one after the other, to compare. Rusage is per process, so each mode is its own run.
func BenchmarkReadFileBatch(b *testing.B) {
	calls := 10000
	if n, err := strconv.Atoi(os.Getenv("AIRLOCK_BENCH_CALLS")); err == nil {
		calls = n
	}
	dir := b.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d.txt", i)), []byte("line one\nline two\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cfg, err := configs.Parse([]byte(`[environment]
type = "local"
workspace = "ws"
timeout = 60
[ledger]
path = "state/receipts.jsonl"
`+os.Getenv("AIRLOCK_BENCH_EXTRA")), dir)
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]pipeline.Call, calls)
	for i := range batch {
		batch[i] = call("read_file", map[string]any{"path": fmt.Sprintf("f%d.txt", i%100)})
	}
	var opts []engine.Option
	switch mode := os.Getenv("AIRLOCK_BENCH_LEDGER"); mode {
	case "", "group":
	case "one-at-a-time":
		opts = append(opts, engine.WithLedgerOptions(receipt.WithoutGroupCommit()))
	default:
		b.Fatalf("AIRLOCK_BENCH_LEDGER=%q: want group or one-at-a-time", mode)
	}
	for i := 0; i < b.N; i++ {
		e, err := engine.New(context.Background(), cfg, opts...)
		if err != nil {
			b.Fatal(err)
		}
		s, err := e.Session(context.Background(), "")
		if err != nil {
			b.Fatal(err)
		}
		stopAnon := watchAnon()
		start := time.Now()
		var bad *pipeline.Result
		s.RunBatchFunc(context.Background(), batch, func(_ int, r pipeline.Result) {
			if r.Status != pipeline.StatusOK && bad == nil {
				bad = &r
			}
		})
		took := time.Since(start)
		b.ReportMetric(stopAnon(), "MiB-anon-airlock")
		if bad != nil {
			b.Fatalf("read_file: %+v", *bad)
		}
		b.ReportMetric(took.Seconds(), "s/batch")
		start = time.Now()
		for j := range batch {
			if _, err := os.ReadFile(filepath.Join(ws, fmt.Sprintf("f%d.txt", j%100))); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(time.Since(start).Seconds(), "raw-s")
		// Closed before the figures are read: the helper's own usage counts once it was
		// reaped.
		_ = e.Close(context.Background())
	}
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	cpu := func(r syscall.Rusage) float64 {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano()).Seconds()
	}
	b.ReportMetric(cpu(self), "cpu-s-airlock")
	b.ReportMetric(cpu(children), "cpu-s-children")
	b.ReportMetric(float64(self.Maxrss)/1024, "MiB-rss-airlock")
	b.ReportMetric(float64(children.Maxrss)/1024, "MiB-rss-children")
}

// watchAnon samples this process's anonymous resident memory (RssAnon: the heap, stacks and
// runtime, what a batch's calls and results cost) every 2 ms until the returned function is
// called, which returns the peak in MiB. Maxrss also counts the executable's pages that were
// read (RssFile, ~58 MiB for a binary of every backend), which do not grow with the batch.
func watchAnon() func() float64 {
	done := make(chan struct{})
	peak := make(chan float64, 1)
	go func() {
		var max float64
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			if v := rssAnon(); v > max {
				max = v
			}
			select {
			case <-done:
				peak <- max
				return
			case <-t.C:
			}
		}
	}()
	return func() float64 { close(done); return <-peak }
}

func rssAnon() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}
