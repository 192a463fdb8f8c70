package kubernetes

import (
	"context"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/backend"
)

var _ backend.FileOps = (*Env)(nil)

// FileOp runs one file operation in the pod's resident helper, which opens the path by
// descriptor (see [backend.FileOps]). A helper whose stream ended is started again first.
func (e *Env) FileOp(ctx context.Context, req backend.FileRequest) (backend.FileResult, error) {
	notes, err := e.ready(ctx)
	if err != nil {
		return backend.FileResult{}, err
	}
	e.rep.Owe(notes...) // owed to the next command's Result
	e.mu.Lock()
	a := e.resident
	e.mu.Unlock()
	if a == nil {
		return backend.FileResult{}, fmt.Errorf("kubernetes: %w: the helper is not running", backend.ErrNoHelper)
	}
	e.touch()
	res, err := a.client.FileOp(ctx, req)
	if errors.Is(err, backend.ErrUnavailable) {
		return res, fmt.Errorf("kubernetes: the helper in pod %s stopped during a file operation; the environment is repaired on the next call: %w", e.name, err)
	}
	return res, err
}
