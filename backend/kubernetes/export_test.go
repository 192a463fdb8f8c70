package kubernetes

import (
	"context"

	"github.com/airlock-dev/airlock/backend"
)

// RawExec runs argv with one exec of its own, the way every command would run without the
// resident helper: the raw alternative the helper's benchmark is timed beside.
func (e *Env) RawExec(ctx context.Context, argv []string) (backend.Result, error) {
	return e.rawExec(ctx, e.name, argv, nil)
}

// ClaimHandle is another claimer's view of this warm-pool pod, as another process would
// have it: its own API connection, the same pod and helper. For the claim race test.
func (e *Env) ClaimHandle() (*Env, error) {
	cl, err := connect(e.cfg)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	h := &Env{cfg: e.cfg, cl: cl, log: e.log, session: e.session, spec: e.spec, fp: e.fp, name: e.name,
		podUID: e.podUID, node: e.node, resident: e.resident, lost: make(chan struct{})}
	h.rep = backend.NewRepairer(h.log, h.logName, h.mended, h.prepare)
	return h, nil
}

// ClaimLost says whether a claim found the pod another claimer's.
func (e *Env) ClaimLost() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.claimLost
}

// ForgetHelper drops the handle's share of the helper, which the member owns, so that the
// handle's Close shows only what it does to the pod.
func (e *Env) ForgetHelper() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.resident = nil
}
