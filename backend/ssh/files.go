package ssh

import (
	"context"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/backend"
)

var _ backend.FileOps = (*Env)(nil)

// FileOp runs one file operation in the remote host's resident helper, which opens the path
// by descriptor (see [backend.FileOps]). In session mode, or while the connection is down
// (the next Exec reconnects), it returns an error wrapping [backend.ErrNoHelper], so the
// caller takes the shell road and says so.
func (e *Env) FileOp(ctx context.Context, req backend.FileRequest) (backend.FileResult, error) {
	e.mu.Lock()
	l, closed := e.link, e.closed
	e.mu.Unlock()
	if closed {
		return backend.FileResult{}, backend.ErrClosed
	}
	if l == nil || !l.alive() || l.helper == nil || l.helper.client.Err() != nil {
		return backend.FileResult{}, fmt.Errorf("ssh: %w on %s (session mode, or the connection is being re-established)", backend.ErrNoHelper, e.cfg.target())
	}
	res, err := l.helper.client.FileOp(ctx, req)
	if errors.Is(err, backend.ErrUnavailable) {
		l.kill(err)
		return res, fmt.Errorf("ssh: %s: the connection to the helper was lost during a file operation: %w", e.cfg.target(), unavailable(l, err))
	}
	return res, err
}
