package local

import (
	"context"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/backend"
)

var _ backend.FileOps = (*Env)(nil)

// FileOp runs one file operation in the session's helper, which opens the path by
// descriptor where commands run (see [backend.FileOps]): in namespace mode it sees exactly
// what commands see, masks included, and holds no capability.
func (e *Env) FileOp(ctx context.Context, req backend.FileRequest) (backend.FileResult, error) {
	if e.isClosed() {
		return backend.FileResult{}, backend.ErrClosed
	}
	res, err := e.helper.Client.FileOp(ctx, req)
	if errors.Is(err, backend.ErrUnavailable) {
		return res, fmt.Errorf("local: the helper stopped during a file operation: %w", err)
	}
	return res, err
}
