package docker

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"

	"github.com/airlock-dev/airlock/backend"
)

var _ backend.Claimer = (*Env)(nil)

// Claim makes a warm-pool container the session's by renaming it from its pool name,
// prefix + "pool-" + ID, to the name a container made for a session has, prefix + "s" + ID:
// one Engine API call, with the helper already running.
//
// The new name is the member's own, the same for every claimer, and that is what makes the
// claim atomic. Docker's rename is not a compare-and-swap on the old name: renames of one
// container to different new names, sent together, can all succeed one after another (20
// out of 20 on the test daemon). Renames to the same new name cannot: the daemon refuses
// the second as renaming a container to its current name, or finds the old name gone. So
// exactly one claimer wins; the others get [backend.ErrClaimed]. Docker's labels cannot
// change after create, so the session is not written on the container: the pool's own
// record of it is the claimer's Env.
//
// A member whose helper has ended is refused without a round trip: the pool closes it.
func (e *Env) Claim(ctx context.Context, session string) error {
	e.mu.Lock()
	closed, member, a := e.rep.Closed(), e.cfg.PoolMember, e.resident
	e.mu.Unlock()
	switch {
	case closed:
		return backend.ErrClosed
	case !member:
		return fmt.Errorf("docker: claim %s: not a warm-pool container", e.name)
	case e.cfg.Helper != HelperOff && (a == nil || !a.alive()):
		return fmt.Errorf("docker: claim %s: its resident helper has ended", e.name)
	}
	from, to := e.poolName(), e.sessionName()
	cctx, cancel := context.WithTimeout(ctx, apiTimeout)
	err := e.cli.ContainerRename(cctx, from, to)
	cancel()
	switch {
	case cerrdefs.IsNotFound(err), cerrdefs.IsInvalidArgument(err), cerrdefs.IsConflict(err):
		e.mu.Lock()
		e.claimLost = true // another claimer holds it: Close must not remove it
		e.mu.Unlock()
		return fmt.Errorf("docker: claim %s: %w (%w)", from, backend.ErrClaimed, err)
	case client.IsErrConnectionFailed(err):
		return e.unreachable(err)
	case err != nil:
		return fmt.Errorf("docker: claim %s (rename): %w", from, err)
	}
	e.mu.Lock()
	e.name, e.cfg.PoolMember = to, false
	e.mu.Unlock()
	e.log.Debug("warm-pool container claimed", "name", to, "session", session)
	return nil
}

// Lost is closed when the helper's stream of an unclaimed member ends: its container was
// stopped or removed. It is nil in exec mode (environment.docker.helper = "off"), where
// nothing runs to watch; the first command then finds the container gone and recreates it.
func (e *Env) Lost() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.resident == nil {
		return nil
	}
	return e.resident.client.Done()
}
