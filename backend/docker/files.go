package docker

import (
	"context"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/backend"
)

var _ backend.FileOps = (*Env)(nil)

// FileOp runs one file operation in the container's resident helper, which opens the path by
// descriptor (see [backend.FileOps]). Without a running helper (helper = "off", the exec
// fallback, or a helper that died and is repaired by the next Exec) it returns an error
// wrapping [backend.ErrNoHelper], so the caller takes the shell road and says so.
func (e *Env) FileOp(ctx context.Context, req backend.FileRequest) (backend.FileResult, error) {
	e.mu.Lock()
	mode, a, disabled := e.mode, e.resident, e.helperDisabled
	e.mu.Unlock()
	if e.rep.Closed() {
		return backend.FileResult{}, backend.ErrClosed
	}
	if mode != ModeHelper || a == nil || !a.alive() {
		why := "the container runs one docker exec per command"
		if disabled != "" {
			why = disabled
		}
		return backend.FileResult{}, fmt.Errorf("docker: %w: %s", backend.ErrNoHelper, why)
	}
	if req.Op == backend.FileWrite {
		req.MinFreeBytes = int64(e.cfg.WorkspaceMinFree)
	}
	res, err := a.client.FileOp(ctx, req)
	if errors.Is(err, backend.ErrUnavailable) {
		return res, fmt.Errorf("docker: the helper in %s stopped during a file operation; the environment is repaired on the next call: %w", e.name, err)
	}
	return res, err
}
