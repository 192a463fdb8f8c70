package kubernetes

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/airlock-dev/airlock/backend"
)

var _ backend.Claimer = (*Env)(nil)

// labelPool marks an unclaimed warm-pool pod (value poolMember). A claim removes it and
// writes the session into labelSession, in the same update.
const (
	labelPool  = "airlock.dev/pool"
	poolMember = "member"
	// claimAttempts bounds the retries of a claim whose update met a change that was not
	// a claim (the kubelet's status update of the pod).
	claimAttempts = 3
)

// Claim makes a warm-pool pod the session's: one update of the pod's labels (the pool label
// removed, the session's written) carrying the resourceVersion of the pod as read, so the
// API server applies it only if nothing changed the pod meanwhile. Of concurrent claims of
// one pod, in any number of processes, exactly one update succeeds; the others get a
// Conflict, read the pod again, find it claimed and return [backend.ErrClaimed]. A Conflict
// that finds the pod still unclaimed (its status changed) is retried with the new version.
// The pod keeps its name (pods cannot be renamed); from now on gc and a repair treat it as
// the session's.
func (e *Env) Claim(ctx context.Context, session string) error {
	e.mu.Lock()
	closed, member, uid, a := e.rep.Closed(), e.cfg.PoolMember, e.podUID, e.resident
	e.mu.Unlock()
	switch {
	case closed:
		return backend.ErrClosed
	case !member:
		return fmt.Errorf("kubernetes: claim %s: not a warm-pool pod", e.name)
	case a == nil || !a.alive():
		return fmt.Errorf("kubernetes: claim %s: its resident helper has ended", e.name)
	}
	pods := e.cl.pods()
	for range claimAttempts {
		actx, cancel := context.WithTimeout(ctx, apiTimeout)
		p, err := pods.Get(actx, e.name, metav1.GetOptions{})
		cancel()
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("kubernetes: claim %s: the pod is gone", e.name)
		}
		if err != nil {
			return e.apiErr("get pod", err)
		}
		if p.UID != uid || p.Labels[labelPool] != poolMember {
			return e.lostClaim(p)
		}
		delete(p.Labels, labelPool)
		p.Labels[labelSession] = labelValue(session)
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		now := time.Now()
		p.Annotations[annLastUse] = now.UTC().Format(time.RFC3339) // its idle time starts now
		actx, cancel = context.WithTimeout(ctx, apiTimeout)
		_, err = pods.Update(actx, p, metav1.UpdateOptions{})
		cancel()
		switch {
		case apierrors.IsConflict(err):
			continue // read again: claimed by another, or only its status changed
		case apierrors.IsNotFound(err):
			return fmt.Errorf("kubernetes: claim %s: the pod is gone", e.name)
		case err != nil:
			return e.apiErr("claim pod", err)
		}
		e.mu.Lock()
		e.cfg.PoolMember, e.claimedBy, e.lastTouch = false, session, now
		e.mu.Unlock()
		e.log.Debug("warm-pool pod claimed", "pod", e.name, "session", session)
		return nil
	}
	return fmt.Errorf("kubernetes: claim %s: the pod kept changing under %d attempts", e.name, claimAttempts)
}

// lostClaim records that another claimer holds the pod, so Close leaves it alone.
func (e *Env) lostClaim(p *corev1.Pod) error {
	e.mu.Lock()
	e.claimLost = true
	e.mu.Unlock()
	return fmt.Errorf("kubernetes: claim %s: %w (session label %q)", e.name, backend.ErrClaimed, p.Labels[labelSession])
}

// Lost is closed when the pod of an unclaimed member goes away: the pod watch saw it
// deleted, evicted or ended (see watchPod). A claimed pod's loss is the session's to repair.
func (e *Env) Lost() <-chan struct{} { return e.lost }

// memberLost closes Lost once, for an unclaimed member.
func (e *Env) memberLost() {
	e.mu.Lock()
	member := e.cfg.PoolMember
	e.mu.Unlock()
	if member {
		e.lostOnce.Do(func() { close(e.lost) })
	}
}
