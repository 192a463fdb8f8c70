package concurrency

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testTimeout bounds tests that would hang if the scheduler held back tasks it should run. It
// is a deadline against deadlock, not a measure of speed.
const testTimeout = 10 * time.Second

func newScheduler(t *testing.T, opts Options) *Scheduler {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New(%+v): %v", opts, err)
	}
	return s
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func readOf(p string) Scope  { return Scope{Paths: []PathAccess{{Path: p, Access: Read}}} }
func writeOf(p string) Scope { return Scope{Paths: []PathAccess{{Path: p, Access: Write}}} }

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		opts        Options
		wantWorkers int
		wantErr     bool
	}{
		{"zero takes default", Options{}, 8, false},
		{"explicit", Options{MaxWorkers: 3}, 3, false},
		{"one", Options{MaxWorkers: 1}, 1, false},
		{"negative", Options{MaxWorkers: -1}, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := New(tc.opts)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("New(%+v) = nil error, want one", tc.opts)
				}
				return
			}
			if err != nil {
				t.Fatalf("New(%+v): %v", tc.opts, err)
			}
			if s.maxWorkers != tc.wantWorkers {
				t.Errorf("maxWorkers = %d, want %d", s.maxWorkers, tc.wantWorkers)
			}
		})
	}
}

// TestRunConcurrent gives each batch tasks that all wait until every one of them has started.
// Run serially, or with a conflict the scheduler invented, the batch would wait for the
// deadline and the tasks left behind would come back Cancelled.
func TestRunConcurrent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		scopes []Scope
	}{
		{"writes to siblings", []Scope{
			writeOf("/w/0"), writeOf("/w/1"), writeOf("/w/2"), writeOf("/w/3"),
			writeOf("/w/4"), writeOf("/w/5"), writeOf("/w/6"), writeOf("/w/7"),
		}},
		{"reads of one file", []Scope{
			readOf("/w/a"), readOf("/w/a"), readOf("/w/a"), readOf("/w/a"),
			readOf("/w/a"), readOf("/w/a"), readOf("/w/a"), readOf("/w/a"),
		}},
		{"reads of ancestors and descendants", []Scope{
			readOf("/"), readOf("/w"), readOf("/w/a"), readOf("/w/a/x"),
		}},
		{"similar prefixes", []Scope{writeOf("/w/a"), writeOf("/w/ab"), writeOf("/w/a.txt")}},
		{"exclusive beside calls with no paths", []Scope{
			{Exclusive: true}, {}, {}, {},
		}},
		{"skipped conflicts do not hold anything back", []Scope{
			writeOf("/w/a"), {Skip: true, NeverParallel: true}, {Skip: true, Exclusive: true},
			{Skip: true, Paths: writeOf("/w").Paths}, writeOf("/w/b"),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			var toStart sync.WaitGroup
			allStarted := make(chan struct{})
			tasks := make([]Task, len(tc.scopes))
			for i, sc := range tc.scopes {
				tasks[i] = Task{Scope: sc}
				if sc.Skip {
					continue
				}
				toStart.Add(1)
				tasks[i].Run = func(ctx context.Context) {
					toStart.Done()
					select {
					case <-allStarted:
					case <-ctx.Done():
					}
				}
			}
			go func() {
				toStart.Wait()
				close(allStarted)
			}()

			s := newScheduler(t, Options{MaxWorkers: len(tasks)})
			timings := s.Run(ctx, tasks)

			if ctx.Err() != nil {
				t.Fatalf("tasks did not all run at once: %v", ctx.Err())
			}
			for i, tm := range timings {
				if tm.Started == tc.scopes[i].Skip || tm.Cancelled || tm.Skipped != tc.scopes[i].Skip {
					t.Errorf("timings[%d] = %+v", i, tm)
				}
			}
		})
	}
}

// TestRunNoHeadOfLineBlocking checks that a ready task is not held back by an earlier task that
// is only waiting for a conflict. Task 0 cannot finish until task 2 has run; task 1 waits for
// task 0. A scheduler that started tasks strictly in order would never reach task 2.
func TestRunNoHeadOfLineBlocking(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	task2Ran := make(chan struct{})
	tasks := []Task{
		{Scope: writeOf("/w/a"), Run: func(ctx context.Context) {
			select {
			case <-task2Ran:
			case <-ctx.Done():
			}
		}},
		{Scope: writeOf("/w/a"), Run: func(context.Context) {}},
		{Scope: writeOf("/w/b"), Run: func(context.Context) { close(task2Ran) }},
	}
	s := newScheduler(t, Options{MaxWorkers: 2})
	timings := s.Run(ctx, tasks)
	if ctx.Err() != nil {
		t.Fatalf("task 2 was held back behind task 1: %v", ctx.Err())
	}
	for i, tm := range timings {
		if !tm.Started {
			t.Errorf("task %d did not start: %+v", i, tm)
		}
	}
	if timings[1].Start.Before(timings[0].End) {
		t.Errorf("task 1 started at %v, before conflicting task 0 ended at %v", timings[1].Start, timings[0].End)
	}
}

// TestRunCancel cancels while tasks are queued, behind a conflict or behind the worker limit,
// and checks that none of them starts.
func TestRunCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()

	started := make(chan struct{})
	var queuedRan atomic.Bool
	queued := func(context.Context) { queuedRan.Store(true) }
	tasks := []Task{
		{Scope: writeOf("/w/a"), Run: func(ctx context.Context) {
			close(started)
			<-ctx.Done()
		}},
		{Scope: writeOf("/w/a"), Run: queued},  // behind task 0
		{Scope: readOf("/w/a/x"), Run: queued}, // behind task 0
		{Scope: Scope{NeverParallel: true}, Run: queued},
		{Scope: writeOf("/w/b"), Run: queued}, // behind the barrier
		{Scope: Scope{Skip: true}},
	}
	s := newScheduler(t, Options{MaxWorkers: 1})

	result := make(chan []Timing)
	go func() { result <- s.Run(ctx, tasks) }()
	<-started
	cancel()
	timings := <-result

	if !timings[0].Started || timings[0].Cancelled {
		t.Errorf("running task: %+v, want Started and not Cancelled", timings[0])
	}
	for i := 1; i < 5; i++ {
		if tm := timings[i]; tm.Started || !tm.Cancelled || !tm.Start.IsZero() {
			t.Errorf("queued task %d: %+v, want Cancelled and never started", i, tm)
		}
	}
	if tm := timings[5]; !tm.Skipped || tm.Cancelled || tm.Started {
		t.Errorf("skipped task: %+v, want Skipped only", tm)
	}
	if queuedRan.Load() {
		t.Error("a queued task ran after cancellation")
	}
}

// TestRunCancelledBeforehand checks that nothing starts when ctx is already done, and that no
// task is left behind by the worker limit either.
func TestRunCancelledBeforehand(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var ran atomic.Bool
	run := func(context.Context) { ran.Store(true) }
	tasks := []Task{
		{Scope: writeOf("/w/a"), Run: run},
		{Scope: writeOf("/w/b"), Run: run},
		{Scope: Scope{Skip: true}},
		{Scope: Scope{}, Run: run},
	}
	timings := newScheduler(t, Options{}).Run(ctx, tasks)
	if ran.Load() {
		t.Error("a task ran on a cancelled ctx")
	}
	for i, tm := range timings {
		want := Timing{Cancelled: true}
		if tasks[i].Scope.Skip {
			want = Timing{Skipped: true}
		}
		if tm != want {
			t.Errorf("timings[%d] = %+v, want %+v", i, tm, want)
		}
	}
}

func TestRunEmpty(t *testing.T) {
	t.Parallel()
	if got := newScheduler(t, Options{}).Run(t.Context(), nil); len(got) != 0 {
		t.Errorf("Run(nil) = %v, want no timings", got)
	}
}

// TestRunPanic checks that a task's panic reaches Run's caller, where it can be recovered, and
// that tasks not yet started stay unstarted.
func TestRunPanic(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	var laterRan atomic.Bool
	tasks := []Task{
		{Scope: writeOf("/w/a"), Run: func(context.Context) { panic(boom) }},
		{Scope: writeOf("/w/a"), Run: func(context.Context) { laterRan.Store(true) }},
	}
	s := newScheduler(t, Options{})

	var recovered any
	func() {
		defer func() { recovered = recover() }()
		s.Run(testContext(t), tasks)
	}()

	pe, ok := recovered.(*PanicError)
	if !ok {
		t.Fatalf("recovered %T %v, want *PanicError", recovered, recovered)
	}
	if pe.Index != 0 || !errors.Is(pe, boom) || len(pe.Stack) == 0 {
		t.Errorf("PanicError = {Index: %d, Value: %v, %d bytes of stack}, want task 0 and boom", pe.Index, pe.Value, len(pe.Stack))
	}
	if laterRan.Load() {
		t.Error("a task started after another panicked")
	}
}

// TestRunLeavesScopesAlone checks that cleaning paths for comparison does not rewrite the
// caller's tasks.
func TestRunLeavesScopesAlone(t *testing.T) {
	t.Parallel()
	tasks := []Task{{Scope: writeOf("/w/a/../b/"), Run: func(context.Context) {}}}
	newScheduler(t, Options{}).Run(testContext(t), tasks)
	if got := tasks[0].Scope.Paths[0].Path; got != "/w/a/../b/" {
		t.Errorf("path became %q", got)
	}
}
