package pipeline

import (
	"context"
	"time"

	"github.com/airlock-dev/airlock/concurrency"
	"github.com/airlock-dev/airlock/receipt"
)

// A batch's results leave in input order, each as soon as its call and every earlier one
// are over, and nothing of a call is kept once its result has left. Kept to the end, a
// batch of 10,000 read_file calls held every call's flight and every result (receipt, data,
// notes) at once, ~27 MB live, twice that in heap with the collector's default target.
//
// The calls are decided first, all of them, in input order, as before: the decisions, the
// approvals asked and the denial budget do not depend on how results leave. The scheduler
// then runs on a goroutine of its own while the caller's goroutine releases results: a call
// waits for its completed line to be durable there, not in a worker, so a slow fsync or a
// slow reader of results delays no call's start.

// batch is one batch between its decisions and the release of its last result.
type batch struct {
	p *Pipeline
	// flights are the batch's calls; the releasing goroutine sets each to nil once it has
	// left, and the scheduler's goroutine touches an element only before it reports it over.
	flights []*flight
	// ready marks the calls that are over; only the releasing goroutine reads or writes it.
	ready []bool
	// over takes the index of each call once it is over; it is closed when the scheduler is
	// done with the batch.
	over  chan int
	tasks []concurrency.Task
	// began is when the scheduler was given the batch, for each call's wait for a slot.
	began time.Time
	// panicked is what the scheduler panicked with, set before over is closed.
	panicked any
}

// newBatch prepares the scheduler's tasks for decided flights. A call refused while it was
// decided is over already; it is skipped by the scheduler.
func newBatch(p *Pipeline, flights []*flight) *batch {
	b := &batch{p: p, flights: flights, ready: make([]bool, len(flights)), over: make(chan int, len(flights))}
	b.tasks = make([]concurrency.Task, len(flights))
	stop := &ledgerStop{}
	for i, f := range flights {
		b.ready[i] = f.result != nil
		// The task finds its flight by index: a closure over f would keep every flight alive
		// as long as the scheduler holds the tasks, to the batch's end.
		b.tasks[i] = concurrency.Task{Scope: p.scope(f), Run: func(ctx context.Context) {
			f := b.flights[i]
			f.ran, f.queued = true, time.Since(b.began)
			p.execute(ctx, f, stop)
			b.over <- i
		}}
	}
	return b
}

// start runs the batch's calls: a single call on the caller's goroutine (as the scheduler
// runs a batch of one, with nothing to release meanwhile), more on a goroutine of their own.
func (b *batch) start(ctx context.Context) {
	b.began = time.Now()
	if len(b.flights) <= 1 {
		b.run(ctx)
		return
	}
	go b.run(ctx)
}

// run is the scheduler's side: it runs the tasks, then ends the calls that never started
// because ctx was cancelled, and reports each call over.
func (b *batch) run(ctx context.Context) {
	defer close(b.over)
	defer func() {
		if r := recover(); r != nil {
			b.panicked = r
		}
	}()
	tasks := b.tasks
	b.tasks = nil
	timings := b.p.sched.Run(ctx, tasks)
	for i, t := range timings {
		if t.Cancelled && b.flights[i].result == nil {
			b.p.cancel(b.flights[i])
			b.over <- i
		}
	}
}

// release hands the results to emit in input order as they become ready, and lets each
// call go once its result has left. It returns once every result has; a panic of the
// scheduler is raised again here, on the caller's goroutine.
func (b *batch) release(emit func(int, Result)) {
	next := 0
	flush := func() {
		for next < len(b.flights) && b.ready[next] {
			r := b.p.settleResult(b.flights[next])
			b.flights[next] = nil
			emit(next, r)
			next++
		}
	}
	flush()
	for i := range b.over {
		b.ready[i] = true
		flush()
	}
	if b.panicked != nil {
		panic(b.panicked)
	}
	for i := next; i < len(b.ready); i++ { // cannot happen: every call is reported over
		b.ready[i] = true
	}
	flush()
}

// settleResult is a call's result as it leaves: with its wait for a slot, once its
// completed receipt line is durable.
func (p *Pipeline) settleResult(f *flight) Result {
	if f.result == nil { // cannot happen: every path sets a result
		p.finish(f, StatusFailed, CodePolicyError, "call ended without a result", receipt.NotExecuted)
		p.complete(f)
	}
	if f.ran {
		q := f.queued.Milliseconds()
		f.result.Metadata.QueuedMS = &q
	}
	p.settle(f)
	return *f.result
}
