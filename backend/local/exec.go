package local

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/procgroup"
	"github.com/airlock-dev/airlock/backend/sandbox"
)

// Exec runs req in its own process group inside the workspace.
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

	argv := req.Argv
	if req.Command != "" {
		argv = []string{e.cfg.Shell, "-c", req.Command}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil && !filepath.IsAbs(argv[0]) {
		return backend.Result{ExitCode: 127, Stderr: []byte(err.Error() + "\n")}, nil
	}
	if path == "" {
		path = argv[0]
	}

	stdout := backend.NewCappedBuffer(capBytes)
	stderr := backend.NewCappedBuffer(capBytes)
	spec := procgroup.Spec{
		Path:      path,
		Args:      argv,
		Dir:       dir,
		Env:       e.commandEnv(req.Env),
		Stdin:     req.Stdin,
		Stdout:    tee(stdout, req.Stdout),
		Stderr:    tee(stderr, req.Stderr),
		Timeout:   timeout,
		KillGrace: e.cfg.KillGrace,
		Isolate:   e.isolate,
	}
	if id := backend.CallFrom(ctx); e.owners != nil && id != "" {
		// Listed from before the fork: the child may connect before its PID is known.
		defer e.owners.TrackStart(&spec, id)()
	}
	var proc *procgroup.Process
	var startErr error
	// The command is started from a thread that carries the sandbox; it inherits it. Only
	// the start runs there; the thread is held for the command until it has ended (so no
	// other command shares its domain meanwhile) while this goroutine waits for it.
	release, err := e.sandbox.Hold(func() error {
		proc, startErr = procgroup.Start(spec)
		return nil
	})
	if err != nil {
		return backend.Result{}, fmt.Errorf("local: %w", err)
	}
	defer release()
	if startErr != nil {
		return backend.Result{ExitCode: procgroup.StartFailureCode(startErr), Stderr: []byte(startErr.Error() + "\n"), Notes: []string{e.sandboxNote}}, nil
	}
	out := proc.Wait(ctx)
	res := backend.Captured(stdout, stderr)
	res.ExitCode, res.Duration = out.ExitCode, out.Duration
	res.TimedOut, res.Cancelled = out.TimedOut, out.Cancelled
	res.Streamed = req.Stdout != nil || req.Stderr != nil
	res.Notes = append(res.Notes, e.sandboxNote)
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
		env := sandbox.ScratchEnv(e.policy.Build(host, withExtra(e.cfg.Env, reqEnv)), e.tempDir, e.sandbox.Enforced())
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
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("%w: working directory: %w", backend.ErrInvalidRequest, err)
	}
	if !backend.Within(e.workspace, real) {
		return "", fmt.Errorf("%w: working directory %q resolves to %s", backend.ErrOutsideWorkspace, dir, real)
	}
	return real, nil
}

// tee adds a live copy to w when the caller asked for one. A failing live writer never
// stops the capture.
func tee(buf *backend.CappedBuffer, live io.Writer) io.Writer {
	if live == nil {
		return buf
	}
	return io.MultiWriter(buf, bestEffort{live})
}

type bestEffort struct{ w io.Writer }

func (b bestEffort) Write(p []byte) (int, error) {
	_, _ = b.w.Write(p)
	return len(p), nil
}

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
