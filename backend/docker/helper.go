package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/helper"
)

// helperConn is one running helper: an attached exec whose stdin and stdout carry the helper
// protocol.
type helperConn struct {
	client  *helper.Client
	hij     types.HijackedResponse
	execID  string
	stderr  *backend.CappedBuffer // what the helper said on stderr, for diagnostics
	demuxed chan struct{}         // closed when the exec's output stream ended
}

func (a *helperConn) alive() bool {
	select {
	case <-a.client.Done():
		return false
	default:
		return true
	}
}

// close ends the stream (the helper kills what still runs and exits) and waits a little for
// the exec to end.
func (a *helperConn) close(ctx context.Context) {
	if a.client != nil {
		_ = a.client.Close()
	} else {
		_ = a.hij.CloseWrite()
	}
	select {
	case <-a.demuxed:
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
	}
	a.hij.Close()
}

// hijackWriter gives the helper client the exec's stdin. Close half-closes the connection so
// the helper sees the end of its input while its output can still be read.
type hijackWriter struct {
	hij  *types.HijackedResponse
	once sync.Once
}

func (w *hijackWriter) Write(p []byte) (int, error) { return w.hij.Conn.Write(p) }

func (w *hijackWriter) Close() error {
	var err error
	w.once.Do(func() { err = w.hij.CloseWrite() })
	return err
}

// binaryInfo is what the backend knows about a helper binary: its digest, or why it cannot
// be used.
type binaryInfo struct {
	sha     string // the digest of every file installed (see [helper.Binary.Digest])
	size    int64
	problem string
	bin     *helper.Binary
}

// checkBinary decides whether the binary at p can run as the helper in an image of the given
// architecture: a linux ELF for that machine, shipped with its loader and libraries when it
// is dynamically linked.
func checkBinary(p, arch string) binaryInfo {
	b, err := helper.Inspect(p)
	if err == nil {
		err = b.CheckGOARCH(arch)
	}
	if err != nil {
		return binaryInfo{problem: err.Error()}
	}
	return binaryInfo{sha: b.Digest, size: b.Size, bin: b}
}

// checkHelper finds the helper binary and checks it can run in the image; the problem, if
// any, is in the result.
func (e *Env) checkHelper() (string, binaryInfo) {
	bin, err := helper.Executable(e.cfg.HelperBinary)
	if err != nil {
		return "", binaryInfo{problem: err.Error()}
	}
	return bin, checkBinary(bin, e.imgArch)
}

// helperPaths are where the helper's executable and, for a dynamically linked one, its
// loader and libraries are installed: /.airlock/helper-DIGEST and /.airlock/helper-DIGEST.d.
func helperPaths(info binaryInfo) (exe, libDir string) {
	exe = path.Join(markDir, "helper-"+info.sha[:16])
	return exe, exe + ".d"
}

// startHelper makes sure the helper in the container is the binary checked when the session
// started, installing it if not, and starts it. The error says why the helper cannot be
// used; the caller falls back to one exec per command.
func (e *Env) startHelper(ctx context.Context, id string) (*helperConn, error) {
	info := e.helper
	if info.problem != "" {
		return nil, errors.New(info.problem)
	}
	exe, libDir := helperPaths(info)
	for i, f := range info.bin.Files {
		dir, target := markDir, exe
		if i > 0 {
			dir, target = libDir, path.Join(libDir, f.Name)
		}
		if err := e.installHelper(ctx, id, f.Path, f.SHA256, dir, target); err != nil {
			return nil, err
		}
	}
	args := []string{helper.Subcommand}
	if !e.cfg.ReadOnlyRootfs {
		args = append(args, "--touch", lastUseFile)
	}
	// Started as root, the helper keeps root as its real user and runs commands as theirs,
	// so that no command can signal it (see helper.RunAs).
	user := e.cfg.User
	if e.spec.HelperRunAs != "" {
		user = mainUser
		args = append(args, "--run-as", e.spec.HelperRunAs)
	}
	cmd := info.bin.Argv(exe, libDir, args...)
	cctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	x, err := e.cli.ContainerExecCreate(cctx, id, container.ExecOptions{
		User: user, Cmd: cmd, WorkingDir: "/",
		AttachStdin: true, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return nil, fmt.Errorf("docker exec create (helper): %w", err)
	}
	hij, err := e.cli.ContainerExecAttach(cctx, x.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("docker exec attach (helper): %w", err)
	}
	a := &helperConn{hij: hij, execID: x.ID, stderr: helper.NewStderr(), demuxed: make(chan struct{})}
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, a.stderr, hij.Reader)
		if err == nil {
			err = io.EOF
		}
		_ = pw.CloseWithError(err)
		close(a.demuxed)
	}()
	l, err := helper.Launch(ctx, pr, &hijackWriter{hij: &a.hij}, a.stderr, e.log.Named("helper"))
	if err != nil {
		a.close(ctx)
		return nil, err
	}
	a.client = l.Client
	e.log.Debug("helper started", "container", shortID(id), "path", exe, "static", info.bin.Static())
	return a, nil
}

// installScript makes sure, as root, that $2 is the helper file with SHA-256 $3, in a
// directory $1 that only root can write (made when missing, inside a directory the previous
// file's install checked), and installs it from stdin when it is not. Nothing found in
// the container is trusted: a directory that others can write is made private again (or set
// aside when it is not root's), and an existing file runs only if it is root's, writable by
// root only, and its digest is the expected one. Without sha256sum in the image the file is
// installed afresh every time. It writes to a new name and renames, so a helper running from
// the old file, or a concurrent install, is not disturbed.
//
// Exit 3: the directory cannot be made safe; 4: the installed file is not the binary.
const installScript = `d=$1 t=$2 want=$3
safe() { set -- "$2" $(ls -ldn "$1" 2>/dev/null); case "$2" in "$1"????-??-*) [ "$4" = 0 ];; *) false;; esac; }
digest() { command -v sha256sum >/dev/null 2>&1 && s=$(sha256sum "$1" 2>/dev/null) && echo "${s%% *}"; }
[ -e "$d" ] || [ -L "$d" ] || mkdir -m 755 "$d" 2>/dev/null
if ! safe "$d" d; then
	if [ -d "$d" ] && [ ! -L "$d" ] && chmod go-w "$d" 2>/dev/null && safe "$d" d; then
		rm -f "$t"
	elif mv -f "$d" "$d.untrusted.$$" 2>/dev/null && mkdir -m 755 "$d" && safe "$d" d; then
		:
	else
		echo "$d is not a directory only root can write, and cannot be made one: $(ls -ldn "$d" 2>&1)" >&2
		exit 3
	fi
fi
if safe "$t" - && [ "$(digest "$t")" = "$want" ]; then echo verified; exit 0; fi
umask 022
n="$t.new.$$"
rm -rf "$n" && cat > "$n" && chmod 755 "$n" || exit 1
{ [ -f "$t" ] && [ ! -L "$t" ]; } || rm -rf "$t"
mv -f "$n" "$t" || exit 1
got=$(digest "$t")
if [ -n "$got" ] && [ "$got" != "$want" ]; then echo "installed file has SHA-256 $got, want $want" >&2; exit 4; fi
echo installed`

// installHelper makes sure target is the helper binary (digest sha), installing bin there if
// it is not, with an exec as root. The directory is the root-owned /.airlock: in a writable
// root filesystem a directory of the image's filesystem made when the container was created,
// with a read-only one a tmpfs of its own (the archive API cannot see into a tmpfs).
func (e *Env) installHelper(ctx context.Context, id, bin, sha, dir, target string) error {
	f, err := os.Open(bin)
	if err != nil {
		return fmt.Errorf("helper binary: %w", err)
	}
	defer f.Close()
	res, err := e.rawExec(ctx, id, rawExec{
		user: "0:0", cmd: []string{"/bin/sh", "-c", installScript, "install", dir, target, sha}, stdin: f,
	})
	if err != nil {
		return fmt.Errorf("install helper: %w", err)
	}
	switch res.ExitCode {
	case 0:
		e.log.Debug("helper in place", "container", shortID(id), "path", target, "how", strings.TrimSpace(string(res.Stdout)))
		return nil
	case 3:
		return fmt.Errorf("install helper: refused: %s", strings.TrimSpace(string(res.Stderr)))
	case 4:
		return fmt.Errorf("install helper to %s: %s (did %s change since the session started?)", target, strings.TrimSpace(string(res.Stderr)), bin)
	}
	return fmt.Errorf("install helper to %s: exit %d: %s", target, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
}
