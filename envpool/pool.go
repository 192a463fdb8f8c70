package envpool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
)

// MakeFunc opens one pool member, ready to be claimed.
type MakeFunc func(ctx context.Context) (backend.Claimer, error)

// Retry pauses after a failed make: the first, and the most.
const (
	retryFirst = 500 * time.Millisecond
	retryMax   = 30 * time.Second
	// fillers is how many members are made at once.
	fillers = 2
	// refillDelay is how long a refill waits after a take (see pop).
	refillDelay = 250 * time.Millisecond
	// closeTimeout bounds the close of one member.
	closeTimeout = 30 * time.Second
)

// Pool keeps up to size ready members. It is safe for concurrent use.
type Pool struct {
	size int
	make MakeFunc
	log  hclog.Logger

	life    context.Context // ends with Close: makes in flight are cancelled
	endLife context.CancelFunc
	wg      sync.WaitGroup // fillers and watchers

	mu      sync.Mutex
	cond    *sync.Cond // signalled when the pool has room, or closes
	idle    []*member  // ready, oldest first
	making  int
	closed  bool
	failing int // consecutive failed makes
	stats   Stats
}

type member struct {
	env   backend.Claimer
	taken chan struct{} // closed when the member leaves the pool: its watcher stops
}

// Stats counts what the pool did, for tests and logs.
type Stats struct {
	// Made and Failed count makes; Claimed members handed to sessions; Misses takes that
	// found the pool empty; Lost members that died while they waited.
	Made, Failed, Claimed, Misses, Lost int
}

// New starts a pool of size members (at least 1) made by mk; it fills in the background.
func New(size int, mk MakeFunc, log hclog.Logger) *Pool {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	p := &Pool{size: max(size, 1), make: mk, log: log.Named("pool")}
	p.cond = sync.NewCond(&p.mu)
	p.life, p.endLife = context.WithCancel(context.Background())
	for range min(fillers, p.size) {
		p.wg.Add(1)
		go p.fill()
	}
	return p
}

// fill makes members while the pool has room, until it closes.
func (p *Pool) fill() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		for !p.closed && len(p.idle)+p.making >= p.size {
			p.cond.Wait()
		}
		if p.closed {
			p.mu.Unlock()
			return
		}
		p.making++
		p.mu.Unlock()

		env, err := p.makeChecked()
		p.mu.Lock()
		p.making--
		if err != nil {
			p.failing++
			p.stats.Failed++
			pause := retryPause(p.failing)
			p.mu.Unlock()
			p.cond.Signal() // another filler may try meanwhile; the pause is this one's
			if p.life.Err() == nil {
				p.log.Warn("warm-pool member could not be made", "error", err, "retry_in", pause)
			}
			select {
			case <-p.life.Done():
			case <-time.After(pause):
			}
			continue
		}
		p.failing = 0
		if p.closed {
			p.mu.Unlock()
			p.closeMember(env)
			return
		}
		m := &member{env: env, taken: make(chan struct{})}
		p.idle = append(p.idle, m)
		p.stats.Made++
		p.wg.Add(1)
		p.mu.Unlock()
		go p.watch(m)
	}
}

// makeChecked makes a member and runs `true` in it once before it is offered: a member that
// cannot run a command is never handed out, and the first command of the session that takes
// it is not the helper's first (which pays for pages and caches a later one finds warm).
func (p *Pool) makeChecked() (backend.Claimer, error) {
	env, err := p.make(p.life)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(p.life, closeTimeout)
	defer cancel()
	res, err := env.Exec(ctx, backend.Request{Command: "true"})
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("true exited %d: %s", res.ExitCode, res.Stderr)
	}
	if err != nil {
		p.closeMember(env)
		return nil, fmt.Errorf("first command in a new member: %w", err)
	}
	return env, nil
}

func retryPause(failures int) time.Duration {
	d := retryFirst
	for i := 1; i < failures && d < retryMax; i++ {
		d *= 2
	}
	return min(d, retryMax)
}

// watch closes and replaces m if it dies before it is taken.
func (p *Pool) watch(m *member) {
	defer p.wg.Done()
	select {
	case <-m.taken:
		return
	case <-p.life.Done():
		return
	case <-m.env.Lost():
	}
	if !p.remove(m) {
		return // taken (or the pool closed) meanwhile: no longer the pool's to replace
	}
	p.log.Warn("warm-pool member died; replacing it")
	p.closeMember(m.env)
}

// remove takes m out of the idle list; false when it was no longer there.
func (p *Pool) remove(m *member) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.idle {
		if x == m {
			p.idle = append(p.idle[:i:i], p.idle[i+1:]...)
			p.stats.Lost++
			close(m.taken)
			p.cond.Signal()
			return true
		}
	}
	return false
}

// Take claims a ready member for the session. ok is false when none is ready (the caller
// starts a sandbox cold); a member whose claim fails is closed and the next one tried.
func (p *Pool) Take(ctx context.Context, session string) (env backend.Environment, ok bool) {
	for {
		m := p.pop()
		if m == nil {
			return nil, false
		}
		err := m.env.Claim(ctx, session)
		if err == nil {
			p.mu.Lock()
			p.stats.Claimed++
			p.mu.Unlock()
			return m.env, true
		}
		if !errors.Is(err, backend.ErrClaimed) {
			p.log.Warn("warm-pool member could not be claimed; trying the next", "error", err)
		}
		p.closeMember(m.env) // rare (a member that died just now): the session waits for it
		if ctx.Err() != nil {
			return nil, false
		}
	}
}

// pop removes the oldest ready member, or returns nil (and counts a miss).
func (p *Pool) pop() *member {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle) == 0 {
		p.stats.Misses++
		return nil
	}
	m := p.idle[0]
	p.idle = p.idle[1:]
	close(m.taken)
	// Room for one more, made a moment later: a sandbox start is the heaviest thing the
	// host does, and the session that just took a member is about to run its first command.
	time.AfterFunc(refillDelay, p.cond.Signal)
	return m
}

// Ready returns how many members wait to be claimed.
func (p *Pool) Ready() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// Size is how many members the pool keeps.
func (p *Pool) Size() int { return p.size }

// Stats returns what the pool did so far.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// WaitReady waits until n members are ready (at most the pool's size), for benchmarks and
// tests; it fails when ctx ends first.
func (p *Pool) WaitReady(ctx context.Context, n int) error {
	n = min(n, p.size)
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for p.Ready() < n {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// Close stops filling, waits for the makes in flight and closes every unclaimed member.
// Claimed members are their sessions' to close.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	idle := p.idle
	p.idle = nil
	for _, m := range idle {
		close(m.taken)
	}
	p.mu.Unlock()
	p.cond.Broadcast()
	p.endLife()

	errs := make([]error, len(idle))
	var wg sync.WaitGroup
	for i, m := range idle {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = m.env.Close(ctx)
		}()
	}
	wg.Wait()
	p.wg.Wait() // fillers close what they were making
	return errors.Join(errs...)
}

// closeMember closes a member the pool no longer keeps, on its own deadline.
func (p *Pool) closeMember(env backend.Environment) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if err := env.Close(ctx); err != nil {
		p.log.Warn("warm-pool member close failed", "error", err)
	}
}
