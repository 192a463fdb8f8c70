package concurrency

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkSchedulerOverhead measures what scheduling costs per call, with tasks that do
// nothing: building the conflict graph, a goroutine per task and the bookkeeping around it.
// ns/op is per batch; ns/call divides it by the batch size.
func BenchmarkSchedulerOverhead(b *testing.B) {
	noop := func(context.Context) {}
	shapes := []struct {
		name  string
		scope func(i int) Scope
	}{
		{"independent", func(i int) Scope { return writeOf(fmt.Sprintf("/w/f%d", i)) }},
		{"chain", func(int) Scope { return writeOf("/w/f") }},
		{"mixed", func(i int) Scope {
			if i%4 == 0 {
				return writeOf("/w/a")
			}
			return readOf(fmt.Sprintf("/w/a/f%d", i))
		}},
	}
	for _, shape := range shapes {
		for _, n := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/%d", shape.name, n), func(b *testing.B) {
				tasks := make([]Task, n)
				for i := range tasks {
					tasks[i] = Task{Scope: shape.scope(i), Run: noop}
				}
				s, err := New(Options{})
				if err != nil {
					b.Fatal(err)
				}
				ctx := b.Context()
				b.ReportAllocs()
				for b.Loop() {
					s.Run(ctx, tasks)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/call")
			})
		}
	}
}

// BenchmarkBatchSpeedup compares 16 independent calls of 1ms each run through the scheduler
// with the same calls run one after another, as a system that serialises whole batches would.
func BenchmarkBatchSpeedup(b *testing.B) {
	const n = 16
	sleep := func(context.Context) { time.Sleep(time.Millisecond) }
	tasks := make([]Task, n)
	for i := range tasks {
		tasks[i] = Task{Scope: writeOf(fmt.Sprintf("/w/f%d", i)), Run: sleep}
	}

	b.Run("scheduler", func(b *testing.B) {
		s, err := New(Options{MaxWorkers: n})
		if err != nil {
			b.Fatal(err)
		}
		ctx := b.Context()
		for b.Loop() {
			s.Run(ctx, tasks)
		}
	})
	b.Run("serial", func(b *testing.B) {
		ctx := b.Context()
		for b.Loop() {
			for _, t := range tasks {
				t.Run(ctx)
			}
		}
	})
}
