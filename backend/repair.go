package backend

import (
	"context"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// Repairer is the part of an environment that keeps a resident helper in a sandbox it does
// not own (a container, a pod) and brings the two back when they go away: the daemon
// removed the container, the pod was evicted, its node was lost, the API server restarted.
// The Docker and Kubernetes backends share it, so that both repair in one way:
//
//   - a call first asks [Repairer.Ready], which repairs only when the environment is not
//     sound, and hands the call the notes owed to its result (why the environment was
//     recreated or the helper restarted): the model learns that files may be lost;
//   - concurrent calls that find the sandbox gone repair once: the others wait, see that
//     the repair worked, and take its notes;
//   - Close ends the Repairer's life, which cancels a repair in flight, and waits for it,
//     so that a sandbox the repair was creating is recorded before Close removes it.
//
// The environment keeps its own lock over its own state; the Repairer's lock guards only
// whether it is closed and the notes it owes.
type Repairer struct {
	log     hclog.Logger
	name    func() string
	mended  func() bool
	prepare func(ctx context.Context, why string) ([]string, error)

	life    context.Context
	endLife context.CancelFunc
	repairs sync.Mutex // one repair at a time; Close waits for the one in flight

	mu     sync.Mutex
	closed bool
	owed   []string
}

// NewRepairer returns the Repairer of one environment. name names the sandbox in the log
// ("container airlock-…"), and may change (a claimed warm-pool member is renamed). mended
// reports whether the helper answers again, checked after waiting for another call's
// repair. prepare brings the sandbox and its helper back and returns the notes owed to the
// next result; it runs under the repair lock, with a context that ends with the Repairer's
// life.
func NewRepairer(log hclog.Logger, name func() string, mended func() bool, prepare func(ctx context.Context, why string) ([]string, error)) *Repairer {
	r := &Repairer{log: log, name: name, mended: mended, prepare: prepare}
	r.life, r.endLife = context.WithCancel(context.Background())
	return r
}

// Life ends when Close starts: work in the background (a watch, a heartbeat) stops with it.
func (r *Repairer) Life() context.Context { return r.life }

// Closed reports whether Close has started.
func (r *Repairer) Closed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Owe adds notes for the next result.
func (r *Repairer) Owe(notes ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.owed = append(r.owed, notes...)
}

// take returns the notes owed, and owes none.
func (r *Repairer) take() ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	notes := r.owed
	r.owed = nil
	return notes, nil
}

// Ready returns the notes owed to the next result, repairing the environment first when
// sound says it needs it (and why).
func (r *Repairer) Ready(ctx context.Context, sound func() (ok bool, why string)) ([]string, error) {
	if r.Closed() {
		return nil, ErrClosed
	}
	if ok, why := sound(); !ok {
		return r.Repair(ctx, why)
	}
	return r.take()
}

// Repair runs prepare, one repair at a time. A call that waited for another's repair and
// finds the helper mended takes the notes owed instead of repairing again. Close cancels a
// repair in flight and waits for it.
func (r *Repairer) Repair(ctx context.Context, why string) ([]string, error) {
	r.repairs.Lock()
	defer r.repairs.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(r.life, cancel)
	defer stop()
	if r.Closed() {
		return nil, ErrClosed
	}
	if r.mended() {
		return r.take()
	}
	r.log.Info("repairing environment", "sandbox", r.name(), "reason", why)
	return r.prepare(ctx, why)
}

// Close marks the environment closed, ends the Repairer's life and waits for a repair in
// flight. When it returns first, the caller tears the environment down and then calls
// release; a second Close returns first = false and nothing to release.
func (r *Repairer) Close() (release func(), first bool) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return func() {}, false
	}
	r.closed = true
	r.mu.Unlock()
	r.endLife()
	r.repairs.Lock() // a repair ends promptly once life has ended
	return r.repairs.Unlock, true
}
