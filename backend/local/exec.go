package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/backend"
)

// pipeDrain bounds how long Exec waits for output pipes to close after the process group was
// killed; only a process that escaped the group can hold them longer.
const pipeDrain = 2 * time.Second

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
	timeout := req.Timeout
	if timeout == 0 {
		timeout = e.cfg.DefaultTimeout
	}
	capBytes := req.MaxOutputBytes
	if capBytes == 0 {
		capBytes = e.cfg.MaxOutputBytes
	}

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
	cmd := &exec.Cmd{
		Path:        path,
		Args:        argv,
		Dir:         dir,
		Env:         e.policy.Build(os.Environ(), req.Env),
		Stdin:       req.Stdin,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		WaitDelay:   pipeDrain,
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return backend.Result{}, fmt.Errorf("local: stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		return backend.Result{}, fmt.Errorf("local: stderr pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW

	start := time.Now()
	if err := cmd.Start(); err != nil {
		closeAll(outR, outW, errR, errW)
		return backend.Result{}, fmt.Errorf("local: start: %w", err)
	}
	closeAll(outW, errW) // the child holds its own copies
	pgid := cmd.Process.Pid

	var drained sync.WaitGroup
	drained.Add(2)
	go drain(&drained, outR, tee(stdout, req.Stdout))
	go drain(&drained, errR, tee(stderr, req.Stderr))

	done := make(chan struct{})
	var timedOut, cancelled bool
	var killed sync.WaitGroup
	killed.Add(1)
	go func() {
		defer killed.Done()
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		select {
		case <-done:
			return
		case <-timer.C:
			timedOut = true
		case <-ctx.Done():
			cancelled = true
		}
		e.killGroup(pgid, done)
	}()

	waitErr := cmd.Wait()
	close(done)
	killed.Wait()
	// Whatever the command left running in its group dies with it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	waitDrained(&drained, outR, errR)

	res := backend.Result{
		ExitCode:    exitCode(cmd.ProcessState, waitErr),
		Stdout:      stdout.Bytes(),
		Stderr:      stderr.Bytes(),
		Truncated:   stdout.Truncated() || stderr.Truncated(),
		StdoutBytes: stdout.Total(),
		StderrBytes: stderr.Total(),
		Duration:    time.Since(start),
		TimedOut:    timedOut,
		Cancelled:   cancelled,
		Streamed:    req.Stdout != nil || req.Stderr != nil,
	}
	e.log.Debug("exec finished", "exit_code", res.ExitCode, "duration_ms", res.Duration.Milliseconds(),
		"timed_out", timedOut, "cancelled", cancelled)
	return res, nil
}

// killGroup sends TERM to the group, then KILL after the grace period unless the leader has
// exited by then.
func (e *Env) killGroup(pgid int, done <-chan struct{}) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	grace := time.NewTimer(e.cfg.KillGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
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

func drain(wg *sync.WaitGroup, r io.Reader, w io.Writer) {
	defer wg.Done()
	_, _ = io.Copy(w, r)
}

// waitDrained waits for both readers to reach EOF, closing them after pipeDrain so that a
// process that escaped the group cannot hold Exec open.
func waitDrained(wg *sync.WaitGroup, rs ...*os.File) {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(pipeDrain):
	}
	closeAll(rs...)
	<-ch
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// exitCode maps a finished process to a shell-style exit code: 128+N for death by signal N.
func exitCode(ps *os.ProcessState, waitErr error) int {
	if ps == nil {
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) && ee.ProcessState != nil {
			ps = ee.ProcessState
		} else {
			return -1
		}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
