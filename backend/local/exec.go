package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/helper"
	"github.com/airlock-dev/airlock/backend/sandbox"
)

// Exec runs req in the session's helper, in its own session and process group inside the
// workspace.
func (e *Env) Exec(ctx context.Context, req backend.Request) (backend.Result, error) {
	if err := req.Validate(); err != nil {
		return backend.Result{}, err
	}
	if e.isClosed() {
		return backend.Result{}, backend.ErrClosed
	}
	dir, err := e.resolveDir(req.Dir)
	if err != nil {
		return backend.Result{}, err
	}
	timeout, capBytes := req.Effective(e.cfg.DefaultTimeout, e.cfg.MaxOutputBytes)
	areq := helper.Request{
		Argv:           req.Argv,
		Command:        req.Command,
		Dir:            dir,
		Workspace:      e.workspace,
		Env:            e.commandEnv(req.Env),
		Stdin:          req.Stdin,
		Timeout:        timeout,
		KillGrace:      e.cfg.KillGrace,
		MaxOutputBytes: capBytes,
		Stdout:         req.Stdout,
		Stderr:         req.Stderr,
	}
	if e.cfg.ServeCall != nil {
		sock, release, err := e.callEgress(backend.CallFrom(ctx))
		if err != nil {
			return backend.Result{}, err
		}
		defer release()
		areq.EgressSocket = sock
	}
	res, err := e.helper.Client.Exec(ctx, areq)
	if errors.Is(err, backend.ErrUnavailable) {
		return backend.Result{}, fmt.Errorf("local: the helper stopped while the command ran (%s); its output is incomplete: %w", strings.TrimSpace(e.helper.Stderr()), err)
	}
	if err != nil {
		return backend.Result{}, fmt.Errorf("local: %w", err)
	}
	res.Notes = append(res.Notes, e.note)
	if explain := e.explain(res); explain != "" {
		res.Notes = append(res.Notes, explain)
	}
	e.log.Debug("exec finished", "exit_code", res.ExitCode, "duration_ms", res.Duration.Milliseconds(),
		"timed_out", res.TimedOut, "cancelled", res.Cancelled)
	return res, nil
}

// commandEnv is the environment a command gets: Airlock's own filtered by the policy, the
// configured and the request's variables on top, the session's scratch directories last.
// Building it (the allowlist's globs and the credential patterns over every value, the git
// overrides, a sort) costs tens of microseconds, a noticeable part of a short command, and
// without variables of the request's own it depends only on Airlock's environment: that one
// is kept with what was built from it and reused while it is unchanged. The slice returned
// is shared and never written to.
func (e *Env) commandEnv(reqEnv map[string]string) []string {
	host := os.Environ()
	build := func() []string {
		env := sandbox.ScratchEnv(e.policy.Build(host, withExtra(e.cfg.Env, reqEnv)), e.tempDir, e.enforced())
		return slices.Clip(env)
	}
	if len(reqEnv) > 0 {
		return build()
	}
	e.envMu.Lock()
	defer e.envMu.Unlock()
	if e.envLast == nil || !slices.Equal(e.envHost, host) {
		e.envHost, e.envLast = host, build()
	}
	return e.envLast
}

// resolveDir confines the working directory to the workspace after resolving symlinks.
func (e *Env) resolveDir(dir string) (string, error) {
	if dir != "" && !filepath.IsAbs(dir) {
		dir = filepath.ToSlash(dir)
	}
	p, err := backend.WorkDir(e.workspace, dir)
	if err != nil {
		return "", err
	}
	if p == e.workspace && e.topUnchanged() {
		return p, nil
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("%w: working directory: %w", backend.ErrInvalidRequest, err)
	}
	if !backend.Within(e.workspace, real) {
		return "", fmt.Errorf("%w: working directory %q resolves to %s", backend.ErrOutsideWorkspace, dir, real)
	}
	return real, nil
}

// topUnchanged reports whether the workspace's path still names, without a symlink, the
// directory New resolved: one lstat, where resolving the path again cost one for each of
// its components (~10 µs a command, most commands running in the top). Anything else
// (the directory replaced, a symlink put in its place or in an ancestor's) takes the
// whole resolution.
func (e *Env) topUnchanged() bool {
	var st unix.Stat_t
	return unix.Lstat(e.workspace, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR &&
		(fileID{dev: st.Dev, ino: st.Ino}) == e.top
}

// fileID is what tells a file from any other while it exists.
type fileID struct{ dev, ino uint64 }

// withExtra is the environment's own variables with the request's on top.
func withExtra(own, req map[string]string) map[string]string {
	if len(own) == 0 {
		return req
	}
	out := make(map[string]string, len(own)+len(req))
	for k, v := range own {
		out[k] = v
	}
	for k, v := range req {
		out[k] = v
	}
	return out
}
