package engine

import (
	"context"
	"fmt"
	"path"
	"path/filepath"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/fileops"
	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/shellrisk"
	"github.com/airlock-dev/airlock/terminal"
	"github.com/airlock-dev/airlock/tool"
)

// assemble builds what every session shares: the registry with the terminal and file
// tools, the path policy and the approval gate.
func (e *Engine) assemble() error {
	e.reg = tool.NewRegistry()
	topts, err := e.assembleJobs()
	if err != nil {
		return err
	}
	if e.enabled(terminal.Toolset) {
		if err := e.reg.Register(terminal.Definition(topts)); err != nil {
			return err
		}
	}
	protected := e.protectedFiles()
	pol, err := pathpolicy.New(e.cfg.Policy, pathpolicy.WithProtectedFiles(protected...))
	if err != nil {
		return err
	}
	fo := fileops.OptionsFrom(pol.Config())
	fo.Hide = func(p string) bool {
		for _, q := range protected {
			if backend.Within(q, p) {
				return true
			}
		}
		return pol.Hides(p)
	}
	if e.enabled(fileops.Toolset) {
		if err := fileops.Register(e.reg, fo); err != nil {
			return err
		}
	}
	e.policy = pol
	if err := e.assembleWeb(); err != nil {
		return err
	}
	for name, mode := range e.cfg.Tools.OutputMode {
		if err := e.reg.SetOutputMode(name, tool.OutputMode(mode)); err != nil {
			return fmt.Errorf("tools.output_mode.%s: %w", name, err)
		}
	}
	if e.cfg.Plan != nil {
		if err := e.checkPlan(*e.cfg.Plan); err != nil {
			return err
		}
	}

	gopts := []approval.Option{approval.WithLogger(e.log), approval.WithShellContext(e.shellContext(pol, protected))}
	if e.opts.approver != nil {
		gopts = append(gopts, approval.WithApprover(&tracker{e: e, next: e.opts.approver}))
	}
	if e.gate, err = approval.NewGate(e.cfg.Approvals.Config, gopts...); err != nil {
		return err
	}
	return nil
}

// shellContext is what the classifier needs to judge a command as the file tools would
// judge the same access: the workspace (on a backend that runs on the host, where it is a
// host path), the write roots and deny names of the policy, and Airlock's own files.
func (e *Engine) shellContext(pol *pathpolicy.Policy, protected []string) shellrisk.Context {
	pc := pol.Config()
	cx := shellrisk.Context{
		WriteRoots: pc.WriteRoots,
		ReadRoots:  pc.ReadRoots,
		DenyNames:  pc.DenyNames,
		Protected:  protected,
	}
	if _, onHost := e.envs.hostMounts(); onHost {
		cx.Workspace = realPath(e.cfg.WorkspaceDir())
	}
	return cx
}

// approvalStep is the gate as the pipeline's approval step.
func (e *Engine) approvalStep() *approval.Step {
	return &approval.Step{Gate: e.gate, CommandTool: terminal.Name}
}

// protectedFiles are Airlock's own files ([configs.Config.OwnFiles]) as the environment
// sees them, symlinks resolved so that they compare with resolved paths. On a backend that
// runs on the host they are host paths; in a container, the ones under a mounted host
// directory are protected at their path inside; an SSH host does not see them.
func (e *Engine) protectedFiles() []string {
	host := e.cfg.OwnFiles()
	for i, p := range host {
		host[i] = realPath(p)
	}
	mounts, onHost := e.envs.hostMounts()
	if onHost {
		return host
	}
	var inside []string
	for _, m := range mounts {
		src := realPath(m.Host)
		for _, p := range host {
			if rel, err := filepath.Rel(src, p); err == nil && backend.Within(src, p) {
				inside = append(inside, path.Join(m.Inside, filepath.ToSlash(rel)))
			}
		}
	}
	return inside
}

// realPath resolves symlinks in p, or in its deepest existing parent when p does not exist.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	dir, base := filepath.Split(filepath.Clean(p))
	if dir == "" || dir == p {
		return p
	}
	return filepath.Join(realPath(filepath.Clean(dir)), base)
}

// tracker records which calls wait for a person, per session, while the approver is asked.
type tracker struct {
	e    *Engine
	next approval.Approver
}

func (t *tracker) Ask(ctx context.Context, p approval.Prompt) (approval.Answer, error) {
	t.e.mu.Lock()
	s := t.e.sessions[p.SessionID]
	t.e.mu.Unlock()
	if s != nil {
		s.addPending(p)
		defer s.removePending(p.CallID)
	}
	return t.next.Ask(ctx, p)
}
