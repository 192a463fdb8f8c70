package local

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/helper"
)

var (
	_ backend.FileOps      = (*Env)(nil)
	_ backend.PathResolver = (*Env)(nil)
)

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

// resolveAnswerBytes bounds a resolve answer.
const resolveAnswerBytes = 16 << 20

// ResolvePaths resolves the path policy's paths in the helper, where commands run (in
// namespace mode: through the same mounts they see), with one message.
func (e *Env) ResolvePaths(ctx context.Context, paths []string) ([]backend.ResolvedPath, error) {
	res, err := e.FileOp(ctx, backend.FileRequest{Op: backend.FileResolve, Data: []byte(strings.Join(paths, "\x00")), MaxBytes: resolveAnswerBytes})
	if err != nil {
		return nil, err
	}
	out, err := helper.DecodeResolved(res.Data)
	if err != nil {
		return nil, fmt.Errorf("local: resolve answer: %w", err)
	}
	if len(out) != len(paths) {
		return nil, fmt.Errorf("local: resolve answer: %d paths for %d", len(out), len(paths))
	}
	return out, nil
}
