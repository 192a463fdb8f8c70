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
