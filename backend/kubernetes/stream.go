package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/airlock-dev/airlock/backend"
)

// execStreams are the streams of one exec in the pod's container.
type execStreams struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// podExec runs cmd in the pod over the exec subresource: WebSocket first, SPDY when the
// server or a proxy refuses the upgrade — only then, for a command that ran and exited
// non-zero must not be run twice. It returns the command's exit code; an error means the
// stream could not be opened or broke.
func (e *Env) podExec(ctx context.Context, pod string, cmd []string, s execStreams) (int, error) {
	req := e.cl.execRequest(pod, &corev1.PodExecOptions{
		Container: containerName, Command: cmd,
		Stdin: s.stdin != nil, Stdout: s.stdout != nil, Stderr: s.stderr != nil,
	})
	ws, err := remotecommand.NewWebSocketExecutor(e.cl.rest, "GET", req.URL().String())
	if err != nil {
		return 0, fmt.Errorf("kubernetes exec: websocket: %w", err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(e.cl.rest, "POST", req.URL())
	if err != nil {
		return 0, fmt.Errorf("kubernetes exec: spdy: %w", err)
	}
	x, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return 0, fmt.Errorf("kubernetes exec: %w", err)
	}
	err = x.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: s.stdin, Stdout: s.stdout, Stderr: s.stderr})
	var code utilexec.CodeExitError
	if errors.As(err, &code) {
		return code.Code, nil
	}
	if err != nil {
		return 0, fmt.Errorf("kubernetes exec in pod %s: %w", pod, err)
	}
	return 0, nil
}

// rawExec runs a small housekeeping command (a survey, a probe) and keeps its output whole
// up to 64 KiB, within apiTimeout.
func (e *Env) rawExec(ctx context.Context, pod string, cmd []string, stdin io.Reader) (backend.Result, error) {
	return e.rawExecWithin(ctx, apiTimeout, pod, cmd, stdin)
}

// rawExecWithin is rawExec within d.
func (e *Env) rawExecWithin(ctx context.Context, d time.Duration, pod string, cmd []string, stdin io.Reader) (backend.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	stdout, stderr := backend.NewCappedBuffer(64<<10), backend.NewCappedBuffer(64<<10)
	code, err := e.podExec(ctx, pod, cmd, execStreams{stdin: stdin, stdout: stdout, stderr: stderr})
	if err != nil {
		return backend.Result{}, err
	}
	return backend.Result{ExitCode: code, Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}, nil
}
