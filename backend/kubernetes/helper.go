package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/helper"
)

// helperConn is one running helper: an exec in the pod whose stdin and stdout carry the helper
// protocol.
type helperConn struct {
	client *helper.Client
	stdin  *io.PipeWriter
	stderr *backend.CappedBuffer // what the helper said on stderr, for diagnostics
	done   chan struct{}         // closed when the exec stream ended
	cancel context.CancelFunc    // ends the stream
}

func (a *helperConn) alive() bool {
	select {
	case <-a.client.Done():
		return false
	case <-a.done:
		return false
	default:
		return true
	}
}

// close ends the helper's input (it kills what still runs and exits), waits a little for
// the stream to end, then cuts it.
func (a *helperConn) close(ctx context.Context) {
	if a.client != nil {
		_ = a.client.Close()
	}
	_ = a.stdin.Close()
	select {
	case <-a.done:
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
	}
	a.cancel()
}

// helperBinary finds the helper binary and inspects it.
func helperBinary(configured string) (*helper.Binary, error) {
	p, err := helper.Executable(configured)
	if err != nil {
		return nil, err
	}
	return helper.Inspect(p)
}

// installScript makes sure $2 is the helper file with SHA-256 $3 in directory $1 (the
// pod's own emptyDir), installing it from stdin when it is not: to a new name, then renamed,
// so a helper running from the old file is not disturbed. Without sha256sum in the image
// the file is installed afresh every time. Exit 4: the installed file is not the binary.
const installScript = `d=$1 t=$2 want=$3
digest() { command -v sha256sum >/dev/null 2>&1 && s=$(sha256sum "$1" 2>/dev/null) && echo "${s%% *}"; }
mkdir -p "$d" || exit 1
if [ -f "$t" ] && [ ! -L "$t" ] && [ "$(digest "$t")" = "$want" ]; then cat >/dev/null; echo verified; exit 0; fi
umask 022
n="$t.new.$$"
rm -rf "$n" && cat > "$n" && chmod 755 "$n" || exit 1
rm -rf "$t" && mv -f "$n" "$t" || exit 1
got=$(digest "$t")
if [ -n "$got" ] && [ "$got" != "$want" ]; then echo "installed file has SHA-256 $got, want $want" >&2; exit 4; fi
echo installed`

// helperPaths are where the helper's executable and, for a dynamically linked one, its
// loader and libraries are installed: /.airlock/helper-DIGEST and /.airlock/helper-DIGEST.d.
func helperPaths(b *helper.Binary) (exe, libDir string) {
	exe = path.Join(helperDir, "helper-"+b.Digest[:16])
	return exe, exe + ".d"
}

// filePath is where the i-th file of the helper goes.
func filePath(exe, libDir string, i int, name string) string {
	if i == 0 {
		return exe
	}
	return path.Join(libDir, name)
}

// podEnv is the container's own environment from /proc/1/environ, without what kubelet
// adds about the cluster's services.
func podEnv(environ string) []string {
	var out []string
	for _, kv := range strings.Split(environ, "\x00") {
		if kv == "" || strings.HasPrefix(kv, "KUBERNETES_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

func (e *Env) installFile(ctx context.Context, pod, bin, sha, dir, target string) error {
	f, err := os.Open(bin)
	if err != nil {
		return fmt.Errorf("helper binary: %w", err)
	}
	defer f.Close()
	// The helper's tens of MB go through the API server and kubelet: part of starting the
	// pod, so within pod_start_timeout rather than one API call's deadline (30 s was too
	// short for a burst of cold pods at load 35).
	res, err := e.rawExecWithin(ctx, e.cfg.PodStartTimeout.D(), pod, []string{"/bin/sh", "-c", installScript, "install", dir, target, sha}, f)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("install helper %s: not copied into the pod within pod_start_timeout (%s): %w", bin, e.cfg.PodStartTimeout.D(), err)
	}
	if err != nil {
		return fmt.Errorf("install helper: %w", err)
	}
	switch res.ExitCode {
	case 0:
		return nil
	case 4:
		return fmt.Errorf("install helper to %s: %s (did %s change since the session started?)", target, strings.TrimSpace(string(res.Stderr)), bin)
	}
	return fmt.Errorf("install helper to %s: exit %d: %s", target, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
}

// surveyScript prints, in one exec, what starting the helper needs to know: `uname -sm`,
// then for each (path, SHA-256) pair of its arguments "ok" when that file is in place,
// else "no", then a separator and PID 1's environment (the image's: the base of every
// command's).
const surveyScript = `uname -sm
while [ $# -ge 2 ]; do
	if [ -f "$1" ] && [ ! -L "$1" ] && command -v sha256sum >/dev/null 2>&1 && s=$(sha256sum "$1" 2>/dev/null) && [ "${s%% *}" = "$2" ]; then echo ok; else echo no; fi
	shift 2
done
echo --environ--
cat /proc/1/environ`

// startHelper installs the helper where it is missing and starts it on one long-lived exec
// stream, which lives until Close (not the call that started it). It returns the
// container's environment too.
func (e *Env) startHelper(ctx context.Context, pod string) (*helperConn, []string, error) {
	if e.helper == nil {
		return nil, nil, errors.New(e.helperProblem)
	}
	exe, libDir := helperPaths(e.helper)
	args := []string{"/bin/sh", "-c", surveyScript, "survey"}
	for i, f := range e.helper.Files {
		args = append(args, filePath(exe, libDir, i, f.Name), f.SHA256)
	}
	res, err := e.rawExec(ctx, pod, args, nil)
	if err != nil {
		return nil, nil, err
	}
	head, environ, _ := strings.Cut(string(res.Stdout), "--environ--\n")
	lines := strings.Split(strings.TrimSpace(head), "\n")
	if len(lines) != 1+len(e.helper.Files) {
		return nil, nil, fmt.Errorf("survey of the pod: unexpected answer %q (stderr %q)", res.Stdout, res.Stderr)
	}
	if err := e.helper.CheckUname(lines[0]); err != nil {
		return nil, nil, err
	}
	start := time.Now()
	for i, f := range e.helper.Files {
		if lines[1+i] == "ok" {
			continue
		}
		target := filePath(exe, libDir, i, f.Name)
		if err := e.installFile(ctx, pod, f.Path, f.SHA256, path.Dir(target), target); err != nil {
			return nil, nil, err
		}
	}
	e.log.Debug("helper in place", "pod", pod, "duration_ms", time.Since(start).Milliseconds())
	cmd := e.helper.Argv(exe, libDir, helper.Subcommand)
	sctx, cancel := context.WithCancel(e.rep.Life())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	a := &helperConn{stdin: inW, stderr: helper.NewStderr(), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(a.done)
		_, err := e.podExec(sctx, pod, cmd, execStreams{stdin: inR, stdout: outW, stderr: a.stderr})
		if err == nil {
			err = io.EOF
		}
		_ = outW.CloseWithError(err)
		_ = inR.CloseWithError(err)
	}()
	l, err := helper.Launch(ctx, outR, inW, a.stderr, e.log.Named("helper"))
	if err != nil {
		a.close(ctx)
		return nil, nil, err
	}
	a.client = l.Client
	e.log.Debug("helper started", "pod", pod, "path", exe)
	return a, podEnv(environ), nil
}
