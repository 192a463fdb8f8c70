package local

import "github.com/airlock-dev/airlock/backend"

var _ backend.HostDir = (*Env)(nil)

// HostDir returns the workspace: on this backend it is a host directory that callers may
// open with os.OpenRoot.
func (e *Env) HostDir() string { return e.workspace }
