package concurrency

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

// propertyPaths is a small tree with the spellings that tempt a scheduler into mistakes:
// similar prefixes, trailing slashes and "..".
var propertyPaths = []string{
	"/w", "/w/a", "/w/a/x", "/w/a/y", "/w/b", "/w/b/z", "/w/ab", "/w/a/", "/w/b/../a/x", "/",
}

// TestRunProperties runs random batches under a seeded generator and checks, for every one, the
// promises Run makes: conflicting tasks never overlap and run in input order, barriers hold, the
// worker limit holds, skipped tasks never run, and timings come back in input order.
func TestRunProperties(t *testing.T) {
	t.Parallel()
	const batches = 300
	for seed := range uint64(batches) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			checkRandomBatch(t, seed)
		})
	}
}

// observed is what an instrumented task saw of its own run. Seq values come from one atomic
// counter shared by the batch, so they order starts and ends exactly; times come from the
// monotonic clock and are checked against the Timing that Run returned.
type observed struct {
	runs               atomic.Int32
	startSeq, endSeq   int64
	startTime, endTime time.Time
}

func randomScope(rng *rand.Rand) Scope {
	var sc Scope
	switch r := rng.IntN(100); {
	case r < 10:
		sc.Skip = true
		sc.NeverParallel = rng.IntN(2) == 0 // skip must win over everything else
		sc.Exclusive = rng.IntN(2) == 0
	case r < 16:
		sc.NeverParallel = true
	case r < 22:
		sc.Exclusive = true
		return sc
	case r < 30:
		return sc // touches no path
	}
	for range 1 + rng.IntN(3) {
		pa := PathAccess{Path: propertyPaths[rng.IntN(len(propertyPaths))], Access: Read}
		switch rng.IntN(10) {
		case 0:
			pa.Access = 0 // unset counts as a write
		case 1, 2, 3, 4:
			pa.Access = Write
		}
		sc.Paths = append(sc.Paths, pa)
	}
	return sc
}

func checkRandomBatch(t *testing.T, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	maxWorkers := 1 + rng.IntN(8)
	n := 5 + rng.IntN(26)

	var seq, running, maxRunning atomic.Int64
	obs := make([]observed, n)
	tasks := make([]Task, n)
	for i := range tasks {
		// Half the tasks return at once; the rest hold their worker up to 2ms, long enough
		// for others to start beside them.
		var sleep time.Duration
		if rng.IntN(2) == 0 {
			sleep = time.Duration(rng.IntN(2001)) * time.Microsecond
		}
		o := &obs[i]
		tasks[i] = Task{Scope: randomScope(rng), Run: func(context.Context) {
			o.runs.Add(1)
			now := running.Add(1)
			for m := maxRunning.Load(); now > m && !maxRunning.CompareAndSwap(m, now); m = maxRunning.Load() {
			}
			o.startTime = time.Now()
			o.startSeq = seq.Add(1)
			time.Sleep(sleep)
			o.endSeq = seq.Add(1)
			o.endTime = time.Now()
			running.Add(-1)
		}}
	}

	s := newScheduler(t, Options{MaxWorkers: maxWorkers})
	timings := s.Run(testContext(t), tasks)

	if len(timings) != n {
		t.Fatalf("%d timings for %d tasks", len(timings), n)
	}
	if m := maxRunning.Load(); m > int64(maxWorkers) {
		t.Errorf("%d tasks ran at once, MaxWorkers is %d", m, maxWorkers)
	}
	var began time.Time
	for i, tm := range timings {
		sc, o := tasks[i].Scope, &obs[i]
		if sc.Skip {
			if o.runs.Load() != 0 || !tm.Skipped || tm.Started || tm.Cancelled {
				t.Errorf("skipped task %d ran %d times, timing %+v", i, o.runs.Load(), tm)
			}
			continue
		}
		if o.runs.Load() != 1 || !tm.Started || tm.Cancelled || tm.Skipped {
			t.Errorf("task %d ran %d times, timing %+v", i, o.runs.Load(), tm)
			continue
		}
		// The timing at index i brackets what task i itself saw, so it belongs to task i.
		if tm.Start.After(o.startTime) || tm.End.Before(o.endTime) {
			t.Errorf("timings[%d] = [%v, %v] does not bracket task %d's run [%v, %v]",
				i, tm.Start, tm.End, i, o.startTime, o.endTime)
		}
		// Every Queued counts from the same moment: the call to Run.
		if b := tm.Start.Add(-tm.Queued); began.IsZero() {
			began = b
		} else if !b.Equal(began) || tm.Queued < 0 {
			t.Errorf("timings[%d]: Start %v minus Queued %v is not the start of Run %v", i, tm.Start, tm.Queued, began)
		}
	}

	for j := range tasks {
		for i := range j {
			a, b := tasks[i].Scope, tasks[j].Scope
			if a.Skip || b.Skip {
				continue
			}
			barrier := a.NeverParallel || b.NeverParallel
			if (barrier || Conflicts(a, b)) && obs[i].endSeq > obs[j].startSeq {
				t.Errorf("task %d %+v started before earlier conflicting task %d %+v ended (barrier %v)",
					j, b, i, a, barrier)
			}
		}
	}
	if t.Failed() {
		t.Logf("seed %d: %d tasks, MaxWorkers %d", seed, n, maxWorkers)
	}
}
