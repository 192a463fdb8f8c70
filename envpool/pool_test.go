package envpool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
)

// fakeMember is a pool member in memory: the pool's bookkeeping is what these tests check;
// claims against a real server are tested in the backends (backend/docker pool_test.go).
type fakeMember struct {
	id      int
	execs   atomic.Int32
	lost    chan struct{}
	claims  atomic.Int32
	closed  atomic.Bool
	claimed atomic.Bool
	failOn  bool // Claim fails (a member that died between its watch and its claim)
	broken  bool // its commands fail: it must never be offered
}

func (f *fakeMember) Exec(context.Context, backend.Request) (backend.Result, error) {
	f.execs.Add(1)
	if f.broken {
		return backend.Result{ExitCode: 127}, nil
	}
	return backend.Result{}, nil
}
func (f *fakeMember) Describe() backend.Description { return backend.Description{Kind: "fake"} }
func (f *fakeMember) Close(context.Context) error   { f.closed.Store(true); return nil }
func (f *fakeMember) Lost() <-chan struct{}         { return f.lost }
func (f *fakeMember) Claim(context.Context, string) error {
	f.claims.Add(1)
	if f.failOn {
		return errors.New("its helper has ended")
	}
	if !f.claimed.CompareAndSwap(false, true) {
		return backend.ErrClaimed
	}
	return nil
}

// maker makes fake members and remembers them.
type maker struct {
	mu      sync.Mutex
	made    []*fakeMember
	fail    atomic.Int32 // fail this many makes first
	broken  atomic.Int32 // make this many broken members first
	delay   time.Duration
	failAll atomic.Bool
}

func (m *maker) make(ctx context.Context) (backend.Claimer, error) {
	if m.delay > 0 {
		select {
		case <-time.After(m.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if m.failAll.Load() || m.fail.Add(-1) >= 0 {
		return nil, errors.New("no image")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	f := &fakeMember{id: len(m.made), lost: make(chan struct{}), broken: m.broken.Add(-1) >= 0}
	m.made = append(m.made, f)
	return f, nil
}

func (m *maker) all() []*fakeMember {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*fakeMember(nil), m.made...)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestFillsTakesAndRefills(t *testing.T) {
	t.Parallel()
	mk := &maker{}
	p := New(3, mk.make, nil)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	if err := p.WaitReady(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	env, ok := p.Take(context.Background(), "s-1")
	if !ok || env.(*fakeMember).id > 2 || env.(*fakeMember).claims.Load() != 1 {
		t.Fatalf("take: %v %v, want one of the 3 ready members, claimed once", env, ok)
	}
	waitFor(t, "a refill", func() bool { return p.Ready() == 3 })
	if n := len(mk.all()); n != 4 {
		t.Errorf("made %d members, want 4 (3 + 1 refill)", n)
	}
}

// A burst larger than the pool: every take either gets a member no other take got, or is
// told at once that none is ready; none waits and none fails.
func TestBurstLargerThanPool(t *testing.T) {
	t.Parallel()
	mk := &maker{delay: 50 * time.Millisecond} // refills do not keep up with the burst
	p := New(4, mk.make, nil)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	if err := p.WaitReady(context.Background(), 4); err != nil {
		t.Fatal(err)
	}
	const burst = 20
	got := make([]backend.Environment, burst)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got[i], _ = p.Take(context.Background(), fmt.Sprint("s-", i))
		}()
	}
	close(start)
	wg.Wait()
	seen := map[*fakeMember]bool{}
	for _, e := range got {
		if e == nil {
			continue
		}
		f := e.(*fakeMember)
		if seen[f] {
			t.Fatalf("member %d handed out twice", f.id)
		}
		seen[f] = true
	}
	if len(seen) != 4 {
		t.Errorf("%d takes got a member, want the pool's 4", len(seen))
	}
	for _, f := range mk.all() {
		if f.claims.Load() > 1 {
			t.Errorf("member %d claimed %d times", f.id, f.claims.Load())
		}
	}
	if s := p.Stats(); s.Misses != burst-4 || s.Claimed != 4 {
		t.Errorf("stats %+v: want %d misses and 4 claims", s, burst-4)
	}
}

func TestDeadMemberReplaced(t *testing.T) {
	t.Parallel()
	mk := &maker{}
	p := New(2, mk.make, nil)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	if err := p.WaitReady(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	dead := mk.all()[0]
	close(dead.lost)
	waitFor(t, "the dead member closed and replaced", func() bool {
		return dead.closed.Load() && len(mk.all()) == 3 && p.Ready() == 2
	})
	for range 2 {
		env, ok := p.Take(context.Background(), "s")
		if !ok || env.(*fakeMember) == dead {
			t.Fatalf("take: %v %v", env, ok)
		}
	}
}

// A member whose claim fails is closed and the next one is taken.
func TestFailedClaimTakesNext(t *testing.T) {
	t.Parallel()
	mk := &maker{}
	p := New(2, mk.make, nil)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	if err := p.WaitReady(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	// The member a take tries first is the oldest ready one, which of two made at once is
	// either.
	p.mu.Lock()
	first := p.idle[0].env.(*fakeMember)
	p.mu.Unlock()
	first.failOn = true
	env, ok := p.Take(context.Background(), "s")
	if !ok || env.(*fakeMember) == first || !first.closed.Load() {
		t.Fatalf("take: %v %v; first closed %v", env, ok, first.closed.Load())
	}
}

func TestCloseLeavesNothing(t *testing.T) {
	t.Parallel()
	mk := &maker{delay: 20 * time.Millisecond}
	p := New(5, mk.make, nil)
	if err := p.WaitReady(context.Background(), 2); err != nil {
		t.Fatal(err)
	}
	taken, _ := p.Take(context.Background(), "s")
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, f := range mk.all() {
		if want := f != taken; f.closed.Load() != want {
			t.Errorf("member %d closed = %v, want %v (the taken one is its session's)", f.id, f.closed.Load(), want)
		}
	}
	if _, ok := p.Take(context.Background(), "s"); ok {
		t.Error("take after close succeeded")
	}
}

// Failed makes are retried after a pause, not in a busy loop, and the pool recovers.
func TestFailingMakesBackOff(t *testing.T) {
	t.Parallel()
	mk := &maker{}
	mk.failAll.Store(true)
	p := New(2, mk.make, nil)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	time.Sleep(300 * time.Millisecond)
	if s := p.Stats(); s.Failed > fillers {
		t.Errorf("%d failed makes in 300ms: want at most one per filler before its first pause", s.Failed)
	}
	mk.failAll.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.WaitReady(ctx, 2); err != nil {
		t.Fatalf("pool did not recover: %v (stats %+v)", err, p.Stats())
	}
}

func TestRetryPause(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{1, retryFirst}, {2, 2 * retryFirst}, {3, 4 * retryFirst}, {100, retryMax}} {
		if got := retryPause(tc.n); got != tc.want {
			t.Errorf("retryPause(%d) = %s, want %s", tc.n, got, tc.want)
		}
	}
}

// A member that cannot run a command is closed, never offered; every offered one ran one.
func TestBrokenMemberNeverOffered(t *testing.T) {
	t.Parallel()
	mk := &maker{}
	mk.broken.Store(2)
	p := New(2, mk.make, nil)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitReady(ctx, 2); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		env, ok := p.Take(context.Background(), "s")
		if !ok {
			t.Fatal("pool empty")
		}
		if f := env.(*fakeMember); f.broken || f.execs.Load() != 1 {
			t.Errorf("offered member %d: broken %v, %d commands before its session", f.id, f.broken, f.execs.Load())
		}
	}
	for _, f := range mk.all() {
		if f.broken && !f.closed.Load() {
			t.Errorf("broken member %d left open", f.id)
		}
	}
}
