package concurrency

import (
	"context"
	"errors"
	"fmt"
	"path"
	"runtime/debug"
	"slices"
	"time"
)

// Options configures a [Scheduler].
type Options struct {
	// MaxWorkers bounds how many calls of one batch run at once. Zero means the default.
	MaxWorkers int
}

// DefaultOptions returns the defaults that [New] fills in for zero fields.
func DefaultOptions() Options {
	return Options{MaxWorkers: 8}
}

// withDefaults fills zero fields from DefaultOptions.
func (o Options) withDefaults() Options {
	if o.MaxWorkers == 0 {
		o.MaxWorkers = DefaultOptions().MaxWorkers
	}
	return o
}

// Validate reports options that cannot work, naming the field.
func (o Options) Validate() error {
	if o.MaxWorkers < 0 {
		return errors.New("concurrency: max_workers: must not be negative")
	}
	return nil
}

// Task is one call of a batch.
type Task struct {
	Scope Scope
	// Run performs the call. It receives the ctx given to [Scheduler.Run] and must return soon
	// after that ctx is cancelled, since the scheduler waits for it. It may be nil only when
	// Scope.Skip is set.
	Run func(ctx context.Context)
}

// Timing is what became of one task.
type Timing struct {
	// Queued is how long the task waited, from the call to [Scheduler.Run] to Start.
	Queued time.Duration
	// Start and End bracket the task's Run; they are zero when it did not start.
	Start, End time.Time
	// Started is set when Run was called.
	Started bool
	// Cancelled is set when the task never started because ctx was cancelled first. A task
	// that was already running when ctx was cancelled is Started, not Cancelled.
	Cancelled bool
	// Skipped is set for a task whose Scope.Skip was set; it was never run.
	Skipped bool
}

// PanicError is the value [Scheduler.Run] panics with, on the caller's goroutine, when a task's
// Run panicked. A panic on a worker goroutine could not be recovered by anyone and would end the
// process; carried back to the caller, it can be.
type PanicError struct {
	// Index is the task's position in the batch.
	Index int
	// Value is what the task panicked with.
	Value any
	// Stack is the task goroutine's stack at the panic.
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("concurrency: task %d panicked: %v", e.Index, e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Scheduler runs batches of tasks, concurrently where their scopes allow. It holds no state
// between batches, so one Scheduler may run several batches at once; the worker limit applies to
// each batch on its own.
type Scheduler struct {
	maxWorkers int
}

// New checks opts and returns a scheduler.
func New(opts Options) (*Scheduler, error) {
	opts = opts.withDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Scheduler{maxWorkers: opts.MaxWorkers}, nil
}

// finished is a worker's report that its task has returned.
type finished struct {
	index int
	panic *PanicError
}

// Run runs tasks and blocks until each has finished, been skipped or been cancelled. A task
// starts only when every earlier task it [Conflicts] with has finished and a worker is free;
// among tasks that are ready, earlier ones start first. Timings come back in input order.
//
// Once ctx is cancelled no further task starts; running tasks see the cancelled ctx and Run
// waits for them. If a task panics, no further task starts either, and once the running ones
// have returned Run panics with a [*PanicError].
func (s *Scheduler) Run(ctx context.Context, tasks []Task) []Timing {
	began := time.Now()
	timings := make([]Timing, len(tasks))
	waitsFor, unblocks := dependencies(tasks)

	var ready []int // tasks whose conflicting predecessors have all finished, in input order
	pending := 0    // tasks neither finished nor given up on
	for i, t := range tasks {
		switch {
		case t.Scope.Skip:
			timings[i].Skipped = true
		case waitsFor[i] == 0:
			ready = append(ready, i)
			pending++
		default:
			pending++
		}
	}

	done := make(chan finished, len(tasks)) // buffered, so a worker never waits to report
	cancelled := ctx.Done()
	started := make([]bool, len(tasks))
	running := 0
	stopped := false
	var firstPanic *PanicError
	for pending > 0 {
		for !stopped && running < s.maxWorkers && len(ready) > 0 {
			if ctx.Err() != nil {
				stopped = true
				break
			}
			i := ready[0]
			ready = ready[1:]
			started[i] = true
			running++
			if len(tasks) == 1 {
				// A batch of one runs on the caller's goroutine: Run waits for it either way,
				// and a new goroutine would grow its stack afresh for every call.
				work(ctx, i, tasks[i].Run, &timings[i], began, done)
				continue
			}
			go work(ctx, i, tasks[i].Run, &timings[i], began, done)
		}
		if running == 0 {
			break // stopped: nothing left will start
		}
		select {
		case f := <-done:
			running--
			pending--
			if f.panic != nil && firstPanic == nil {
				firstPanic = f.panic
				stopped = true
			}
			for _, j := range unblocks[f.index] {
				if waitsFor[j]--; waitsFor[j] == 0 {
					k, _ := slices.BinarySearch(ready, j)
					ready = slices.Insert(ready, k, j)
				}
			}
		case <-cancelled:
			stopped = true
			cancelled = nil // seen once is enough; a nil channel keeps select from spinning
		}
	}

	for i := range tasks {
		if !tasks[i].Scope.Skip && !started[i] {
			timings[i].Cancelled = true
		}
	}
	if firstPanic != nil {
		panic(firstPanic)
	}
	return timings
}

// dependencies returns, for each task, how many earlier tasks it conflicts with, and for each
// task the later tasks that conflict with it. Only earlier tasks count, so the graph has no
// cycle.
func dependencies(tasks []Task) (waitsFor []int, unblocks [][]int) {
	scopes := make([]Scope, len(tasks))
	for i, t := range tasks {
		scopes[i] = cleaned(t.Scope)
	}
	// Two calls that only read never conflict: a batch of reads skips the comparison of
	// every pair of paths (10,000 reads are 50 million pairs).
	readOnly := make([]bool, len(tasks))
	for i, sc := range scopes {
		readOnly[i] = onlyReads(sc)
	}
	waitsFor = make([]int, len(tasks))
	unblocks = make([][]int, len(tasks))
	for j := range scopes {
		for i := range j {
			if readOnly[i] && readOnly[j] {
				continue
			}
			if conflicts(scopes[i], scopes[j], overlapClean) {
				waitsFor[j]++
				unblocks[i] = append(unblocks[i], j)
			}
		}
	}
	return waitsFor, unblocks
}

// onlyReads reports whether sc conflicts with no other scope that only reads: by the rules
// of conflicts, a call that is skipped, or neither a barrier nor exclusive and reads its paths.
func onlyReads(sc Scope) bool {
	if sc.Skip {
		return true
	}
	if sc.NeverParallel || sc.Exclusive {
		return false
	}
	for _, p := range sc.Paths {
		if p.Access != Read {
			return false
		}
	}
	return true
}

// cleaned returns sc with every path passed through path.Clean, copying Paths rather than
// changing the caller's slice.
func cleaned(sc Scope) Scope {
	if len(sc.Paths) == 0 {
		return sc
	}
	paths := make([]PathAccess, len(sc.Paths))
	for i, p := range sc.Paths {
		paths[i] = PathAccess{Path: path.Clean(p.Path), Access: p.Access}
	}
	sc.Paths = paths
	return sc
}

// work runs one task and reports to done, even if the task panics.
func work(ctx context.Context, i int, run func(context.Context), t *Timing, began time.Time, done chan<- finished) {
	defer func() {
		t.End = time.Now()
		f := finished{index: i}
		if r := recover(); r != nil {
			f.panic = &PanicError{Index: i, Value: r, Stack: debug.Stack()}
		}
		done <- f
	}()
	t.Started = true
	t.Start = time.Now()
	t.Queued = t.Start.Sub(began)
	run(ctx)
}
