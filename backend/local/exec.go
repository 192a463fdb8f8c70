package local

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

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

	extra := withExtra(e.cfg.Env, req.Env)
	stdout := backend.NewCappedBuffer(capBytes)
	stderr := backend.NewCappedBuffer(capBytes)
	spec := procgroup.Spec{
		Path:      path,
		Args:      argv,
		Dir:       dir,
		Env:       sandbox.ScratchEnv(e.policy.Build(os.Environ(), extra), e.tempDir, e.sandbox.Enforced()),
		Stdin:     req.Stdin,
		Stdout:    tee(stdout, req.Stdout),
		Stderr:    tee(stderr, req.Stderr),
		Timeout:   timeout,
		KillGrace: e.cfg.KillGrace,
		Isolate:   e.isolate,
	}
	if id := backend.CallFrom(ctx); e.owners != nil && id != "" {
		spec.Track = e.owners.Track(id)
	}
	var out procgroup.Outcome
	var runErr error
	// The command is started from a thread that carries the sandbox; it inherits it.
	if err := e.sandbox.Do(func() error {
		out, runErr = procgroup.Run(ctx, spec)
		return nil
	}); err != nil {
		return backend.Result{}, fmt.Errorf("local: %w", err)
	}
	if runErr != nil {
		return backend.Result{ExitCode: procgroup.StartFailureCode(runErr), Stderr: []byte(runErr.Error() + "\n"), Notes: []string{e.sandboxNote}}, nil
	}
	res := backend.Captured(stdout, stderr)
	res.ExitCode, res.Duration = out.ExitCode, out.Duration
	res.TimedOut, res.Cancelled = out.TimedOut, out.Cancelled
	res.Streamed = req.Stdout != nil || req.Stderr != nil
	res.Notes = append(res.Notes, e.sandboxNote)
	e.log.Debug("exec finished", "exit_code", res.ExitCode, "duration_ms", res.Duration.Milliseconds(),
		"timed_out", res.TimedOut, "cancelled", res.Cancelled)
	return res, nil
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
