package backend

import (
	"context"
	"errors"
)

// Warm pools. A backend whose record sets [Record.WarmPool] can keep sandboxes ready for
// sessions that have not asked yet: the runtime (package envpool) opens pool members through
// [Record.Open] with [Settings.PoolMember] set, keeps the section's [Pooled.PoolSize] of them
// ready and hands one to a new session with [Claimer.Claim]. What stays with the backend is
// only what is special to it: making a member (its ordinary Open) and claiming one atomically.

// Claimer is implemented by an environment opened with [Settings.PoolMember]: a sandbox that
// is running and ready (on Docker: container started, resident helper running), of the same
// configuration as the sessions it is kept for, and not yet any session's.
type Claimer interface {
	Environment
	// Claim makes the sandbox the session's (session is the runtime's session ID). It is
	// atomic on the backend's own server, across processes: of concurrent claims of one
	// sandbox exactly one succeeds, the others get [ErrClaimed] and take another. It must be
	// fast — the sandbox is already running — so it does one atomic update and no more
	// (Docker: rename the container; Kubernetes: an optimistic-lock update of the pod's
	// labels). After it, the environment serves the session as if Open had made it for it.
	// A sandbox whose claim failed is closed by the caller; Close then leaves alone what
	// another claimer holds.
	Claim(ctx context.Context, session string) error
	// Lost is closed when the unclaimed sandbox dies (its helper's stream ended); the pool
	// then closes and replaces it. Nil when the backend cannot tell without a round trip:
	// such a member is found dead by its first command, which repairs it as usual.
	Lost() <-chan struct{}
}

// Pooled is implemented by the sections of backends whose record sets [Record.WarmPool].
type Pooled interface {
	// WarmPool is how many ready sandboxes to keep (0: no pool, every session starts cold).
	PoolSize() int
	// SetWarmPool sets it, together with whatever a pool needs in the section (a sandbox
	// per session): for `airlock bench --session-start` and tests.
	SetPoolSize(n int)
}

// ErrClaimed is returned by [Claimer.Claim] when another claimer took the sandbox first.
var ErrClaimed = errors.New("sandbox already claimed")

// MaxWarmPool bounds a warm pool's size.
const MaxWarmPool = 64
