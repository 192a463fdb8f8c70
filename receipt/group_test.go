package receipt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// heldSync makes the ledger's first fsync wait until n more appends are queued behind it,
// so that the next commit is one group of exactly those n. It returns the number of fsyncs.
func heldSync(t *testing.T, l *Ledger, n int, failGroup error) *atomic.Int64 {
	t.Helper()
	var syncs atomic.Int64
	l.syncFile = func(f *os.File) error {
		k := syncs.Add(1)
		if k == 1 {
			deadline := time.Now().Add(10 * time.Second)
			for queued(l) < n {
				if time.Now().After(deadline) {
					return fmt.Errorf("test: only %d appends queued, want %d", queued(l), n)
				}
				time.Sleep(time.Millisecond)
			}
		}
		if k == 2 && failGroup != nil {
			return failGroup
		}
		return f.Sync()
	}
	return &syncs
}

func queued(l *Ledger) int {
	l.qmu.Lock()
	defer l.qmu.Unlock()
	return len(l.queue)
}

// appendAll appends a dispatched and a completed line for each of n calls from n goroutines
// (the dispatched first) and returns each call's errors.
func appendAll(l *Ledger, n int, prefix string) [][2]error {
	errs := make([][2]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("%s%d", prefix, i)
			errs[i][0] = l.Append(EventDispatched, &Receipt{CallID: id})
			errs[i][1] = l.Append(EventCompleted, &Receipt{CallID: id, Outcome: Executed})
		}()
	}
	wg.Wait()
	return errs
}

// readLines returns the ledger's lines, which must verify.
func readLines(t *testing.T, path string) []Line {
	t.Helper()
	if _, err := VerifyFile(path); err != nil {
		t.Fatalf("verify: %v", err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// readEvents maps "call_id event" to how often it is in the ledger, which must verify.
func readEvents(t *testing.T, path string) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for _, ln := range readLines(t, path) {
		if ln.Receipt != nil {
			seen[ln.Receipt.CallID+" "+ln.Event]++
		}
	}
	return seen
}

// TestGroupCommitManyAppenders: appends from many goroutines are committed in groups (fewer
// fsyncs than lines), the chain verifies, and every line is there exactly once, each call's
// dispatched line before its completed one.
func TestGroupCommitManyAppenders(t *testing.T) {
	t.Parallel()
	const callers, rounds = 32, 20
	l, path := openTest(t)
	var syncs atomic.Int64
	l.syncFile = func(f *os.File) error { syncs.Add(1); return f.Sync() }
	for r := range rounds {
		for i, e := range appendAll(l, callers, fmt.Sprintf("r%d-", r)) {
			if e[0] != nil || e[1] != nil {
				t.Fatalf("call %d: %v, %v", i, e[0], e[1])
			}
		}
	}
	seen := readEvents(t, path)
	if len(seen) != 2*callers*rounds {
		t.Errorf("%d distinct lines, want %d", len(seen), 2*callers*rounds)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s written %d times", k, n)
		}
	}
	verifyPasses(t, path, 2*callers*rounds)
	t.Logf("%d lines in %d fsyncs", 2*callers*rounds, syncs.Load())
}

// TestGroupCommitIsOneFsync: appends queued behind a commit in progress go to disk with one
// write and one fsync, in a chain that verifies.
func TestGroupCommitIsOneFsync(t *testing.T) {
	t.Parallel()
	const n = 16
	l, path := openTest(t)
	syncs := heldSync(t, l, n, nil)
	var writes atomic.Int64
	l.writeLine = func(f *os.File, b []byte) (int, error) { writes.Add(1); return f.Write(b) }
	var wg sync.WaitGroup
	errs := make([]error, n+1)
	wg.Add(1)
	go func() { defer wg.Done(); errs[n] = l.Append(EventCompleted, &Receipt{CallID: "first"}) }()
	for syncs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = l.Append(EventDispatched, &Receipt{CallID: fmt.Sprint(i)}) }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if syncs.Load() != 2 || writes.Load() != 2 {
		t.Errorf("%d writes and %d fsyncs for a line and a group of %d; want 2 and 2", writes.Load(), syncs.Load(), n)
	}
	verifyPasses(t, path, n+1)
}

// TestGroupFailureFailsEveryCaller: when the group's write or fsync fails, no line of the
// group stays in the file and every caller in it gets the error (its call does not run);
// the caller committed before is untouched and the ledger goes on.
func TestGroupFailureFailsEveryCaller(t *testing.T) {
	t.Parallel()
	eio := &os.PathError{Op: "sync", Path: "ledger", Err: syscall.EIO}
	for _, tc := range []struct {
		name   string
		inSync bool
	}{{"write EIO", false}, {"sync EIO", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const n = 8
			l, path := openTest(t)
			var failSync error
			if tc.inSync {
				failSync = eio
			}
			syncs := heldSync(t, l, n, failSync)
			if !tc.inSync {
				var writes atomic.Int64
				failingWrites(l, syscall.EIO, func() bool { return writes.Add(1) == 2 })
			}
			var wg sync.WaitGroup
			errs := make([]error, n)
			var first error
			wg.Add(1)
			go func() { defer wg.Done(); first = l.Append(EventCompleted, &Receipt{CallID: "first"}) }()
			for syncs.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			for i := range n {
				wg.Add(1)
				go func() { defer wg.Done(); errs[i] = l.Append(EventDispatched, &Receipt{CallID: fmt.Sprint(i)}) }()
			}
			wg.Wait()
			if first != nil {
				t.Fatalf("the line before the group: %v", first)
			}
			for i, err := range errs {
				if !errors.Is(err, syscall.EIO) {
					t.Errorf("caller %d in the failed group: %v, want EIO", i, err)
				}
			}
			verifyPasses(t, path, 1)
			if err := l.Append(EventCompleted, &Receipt{CallID: "after"}); err != nil {
				t.Fatal(err)
			}
			verifyPasses(t, path, 2)
		})
	}
}

// TestGroupFullDiskKeepsReserveRules: a group that meets a full disk is written line by line
// by the reserve's rules: its dispatched lines are refused with a SpaceError, its completed
// lines spend the reserve and are kept.
func TestGroupFullDiskKeepsReserveRules(t *testing.T) {
	t.Parallel()
	const n = 6
	l, path := openTest(t, WithReserve(16*reserveStep))
	syncs := heldSync(t, l, 2*n, nil)
	full := atomic.Bool{}
	failingWrites(l, syscall.ENOSPC, func() bool {
		fi, err := os.Stat(reservePath(path))
		return full.Load() && (err != nil || fi.Size() > 12*reserveStep)
	})
	var wg sync.WaitGroup
	errs := make([]error, 2*n)
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = l.Append(EventCompleted, &Receipt{CallID: "first"})
	}()
	for syncs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	full.Store(true)
	for i := range 2 * n {
		event := EventDispatched
		if i%2 == 1 {
			event = EventCompleted
		}
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = l.Append(event, &Receipt{CallID: fmt.Sprint(i)}) }()
	}
	wg.Wait()
	kept := 1
	for i, err := range errs {
		var se *SpaceError
		switch {
		case i%2 == 0 && !errors.As(err, &se):
			t.Errorf("dispatched %d on a full disk: %v, want a SpaceError", i, err)
		case i%2 == 1 && err != nil:
			t.Errorf("completed %d on a full disk: %v, want it kept in the reserve", i, err)
		case i%2 == 1:
			kept++
		}
	}
	verifyPasses(t, path, kept)
}

// BenchmarkConcurrentAppend: N goroutines appending at once, with group commit and with
// every line written and fsynced alone, in the same run. Reported as lines/s.
func BenchmarkConcurrentAppend(b *testing.B) {
	for _, writers := range []int{1, 16, 64} {
		for _, mode := range []struct {
			name string
			opts []Option
		}{{"group", nil}, {"one-at-a-time", []Option{WithoutGroupCommit()}}} {
			b.Run(fmt.Sprintf("%s/writers=%d", mode.name, writers), func(b *testing.B) {
				l, err := Open(filepath.Join(b.TempDir(), "receipts.jsonl"), mode.opts...)
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				r := &Receipt{CallID: "c", ToolName: "read_file", Decision: "allow"}
				var next atomic.Int64
				start := time.Now()
				b.ResetTimer()
				var wg sync.WaitGroup
				for range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for next.Add(1) <= int64(b.N) {
							if err := l.Append(EventDispatched, r); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "lines/s")
			})
		}
	}
}

// TestAppendAsync: a line queued with AppendAsync is committed without its caller waiting,
// in order with the appends after it: its wait returns once the line is in the file, a
// later Append's line never comes before it, and the chain verifies. A failed sync reaches
// the waiter.
func TestAppendAsync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "receipts.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var waits []func() error
	for i := range 20 {
		waits = append(waits, l.AppendAsync(EventCompleted, &Receipt{CallID: fmt.Sprintf("async-%d", i)}))
		if err := l.Append(EventDispatched, &Receipt{CallID: fmt.Sprintf("sync-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range waits {
		if err := w(); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
	lines := readLines(t, path)
	if len(lines) != 40 {
		t.Fatalf("%d lines, want 40", len(lines))
	}
	for i, ln := range lines {
		want := fmt.Sprintf("async-%d", i/2)
		if i%2 == 1 {
			want = fmt.Sprintf("sync-%d", i/2)
		}
		if ln.Receipt.CallID != want {
			t.Errorf("line %d is %s, want %s", i+1, ln.Receipt.CallID, want)
		}
	}

	l.syncFile = func(*os.File) error { return syscall.EIO }
	if err := l.AppendAsync(EventCompleted, &Receipt{CallID: "lost"})(); !errors.Is(err, syscall.EIO) {
		t.Errorf("wait after a failed sync: %v, want EIO", err)
	}
}
