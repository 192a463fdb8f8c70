package engine_test

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/airlock-dev/airlock/backend/docker/dockertest"
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/pipeline"
)

// BenchmarkDockerSessions opens AIRLOCK_BENCH_SESSIONS (50 by default) Docker sessions at
// once through one runtime, each in a container of its own (reuse_container = false), each running a batch (a command, a write and a read), then,
// with every session idle, reports the open time (session open plus the first batch's
// start: p50, p99), Airlock's heap per idle session and each idle container's memory as
// the daemon counts it; closing leaves no container behind.
//
//	go test -run x -bench DockerSessions -benchtime 1x ./engine/
func BenchmarkDockerSessions(b *testing.B) {
	n := 50
	if v, err := strconv.Atoi(os.Getenv("AIRLOCK_BENCH_SESSIONS")); err == nil && v > 0 {
		n = v
	}
	dir := b.TempDir()
	toml, prefix := dockertest.Config(b, "sessions", 60, "", "reuse_container = false")
	cfg, err := configs.Parse([]byte(toml+"[ledger]\npath = \"receipts.jsonl\"\n"), dir)
	if err != nil {
		b.Fatal(err)
	}
	cli := dockertest.Client(b)
	ctx := context.Background()
	for b.Loop() {
		e, err := engine.New(ctx, cfg)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		opens, batches := runSessions(b, e, n)
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		mem := containerMemory(b, cli, prefix)
		b.ReportMetric(pct(opens, 50).Seconds()*1000, "open-p50-ms")
		b.ReportMetric(pct(opens, 99).Seconds()*1000, "open-p99-ms")
		b.ReportMetric(pct(batches, 50).Seconds()*1000, "batch-p50-ms")
		b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/float64(n)/1024, "airlock-KiB/session")
		if len(mem) > 0 {
			b.ReportMetric(float64(pct(mem, 50))/1024/1024, "container-MiB-p50")
		}
		b.Logf("%d sessions: open p50 %s p99 %s; batch p50 %s; %d containers, memory p50 %.1f MiB",
			n, pct(opens, 50), pct(opens, 99), pct(batches, 50), len(mem), float64(pct(mem, 50))/1024/1024)
		if err := e.Close(ctx); err != nil {
			b.Fatal(err)
		}
		if left := containerMemory(b, cli, prefix); len(left) != 0 {
			b.Fatalf("%d containers left after close", len(left))
		}
	}
}

// runSessions opens n sessions at once, each running one batch, and returns how long
// each took to open and to run its batch.
func runSessions(b *testing.B, e *engine.Engine, n int) (opens, batches []time.Duration) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			s, err := e.Session(context.Background(), "")
			if err != nil {
				b.Error(err)
				return
			}
			opened := time.Now()
			res := s.RunBatch(context.Background(), []pipeline.Call{
				call("terminal", map[string]any{"command": "echo started"}),
				call("write_file", map[string]any{"path": "note.txt", "content": "session " + strconv.Itoa(i) + "\n"}),
				call("read_file", map[string]any{"path": "note.txt"}),
			})
			done := time.Now()
			for _, r := range res {
				if r.Status != pipeline.StatusOK {
					b.Errorf("session %d: %s %s %s", i, r.ToolName, r.Status, r.ErrorMessage)
				}
			}
			if !strings.Contains(res[2].Content, "session "+strconv.Itoa(i)) {
				b.Errorf("session %d read another's note: %q", i, res[2].Content)
			}
			mu.Lock()
			opens, batches = append(opens, opened.Sub(start)), append(batches, done.Sub(opened))
			mu.Unlock()
		}()
	}
	wg.Wait()
	return opens, batches
}

// containerMemory is the memory of every container whose name starts with prefix, as the
// daemon's one-shot stats give it (usage less the page cache).
func containerMemory(b *testing.B, cli *client.Client, prefix string) []uint64 {
	ctx := context.Background()
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("name", prefix))})
	if err != nil {
		b.Fatal(err)
	}
	var out []uint64
	for _, c := range list {
		st, err := cli.ContainerStatsOneShot(ctx, c.ID)
		if err != nil {
			continue
		}
		var s container.StatsResponse
		err = json.NewDecoder(st.Body).Decode(&s)
		st.Body.Close()
		if err != nil {
			continue
		}
		// As docker stats counts it: usage less the inactive page cache (cgroup v1 names it
		// total_inactive_file, v2 inactive_file).
		use, cache := s.MemoryStats.Usage, s.MemoryStats.Stats["total_inactive_file"]
		if cache == 0 {
			cache = s.MemoryStats.Stats["inactive_file"]
		}
		if cache < use {
			use -= cache
		}
		out = append(out, use)
	}
	return out
}

// pct is the p-th percentile of d (nearest rank).
func pct[T cmp.Ordered](d []T, p int) T {
	var zero T
	if len(d) == 0 {
		return zero
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}
