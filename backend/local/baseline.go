package local

import (
	"context"
	"os/exec"
	"syscall"

	"github.com/airlock-dev/airlock/backend"
)

var _ backend.StartBaseliner = (*Env)(nil)

// StartBaseline is the raw alternative to a session's start, for `airlock bench
// --session-start`: a fork/exec of the configured shell running `true` in new namespaces
// of the kinds the session's helper got (mount, PID, IPC and UTS; network and user as the
// helper has them) — what `unshare` does — with no filesystem built, no helper and no
// sandbox. In fallback mode the helper has no namespaces, and neither has the alternative.
func (e *Env) StartBaseline(context.Context) (*backend.Baseline, error) {
	name := e.cfg.Shell + " -c true, fork/exec"
	start := func(cmd *exec.Cmd) error {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		return cmd.Start()
	}
	if e.namespace != nil {
		ns := *e.namespace
		name += " in new namespaces (as unshare)"
		start = ns.Start
	}
	run := func(ctx context.Context) error {
		cmd := exec.CommandContext(ctx, e.cfg.Shell, "-c", "true")
		cmd.Dir = "/"
		if err := start(cmd); err != nil {
			return err
		}
		return cmd.Wait()
	}
	return &backend.Baseline{Name: name, Run: run, Close: func() {}}, nil
}
