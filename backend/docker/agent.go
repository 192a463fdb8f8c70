package docker

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
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
	"github.com/airlock-dev/airlock/backend/agent"
)

// helloTimeout bounds how long a starting helper has to answer.
const helloTimeout = 15 * time.Second

// agentConn is one running helper: an attached exec whose stdin and stdout carry the agent
// protocol.
type agentConn struct {
	client  *agent.Client
	hij     types.HijackedResponse
	execID  string
	stderr  *backend.CappedBuffer // what the helper said on stderr, for diagnostics
	demuxed chan struct{}         // closed when the exec's output stream ended
}

func (a *agentConn) alive() bool {
	select {
	case <-a.client.Done():
		return false
	default:
		return true
	}
}

// close ends the stream (the helper kills what still runs and exits) and waits a little for
// the exec to end.
func (a *agentConn) close(ctx context.Context) {
	_ = a.client.Close()
	select {
	case <-a.demuxed:
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
	}
	a.hij.Close()
}

// hijackWriter gives the agent client the exec's stdin. Close half-closes the connection so
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

// binaryInfo is what the backend knows about an agent binary: its digest, or why it cannot
// be used.
type binaryInfo struct {
	sha     string
	size    int64
	problem string
}

var binaryCache sync.Map // path|size|mtime -> binaryInfo

// checkBinary decides whether the binary at p can run as the helper in an image of the given
// architecture: a static linux ELF for that machine.
func checkBinary(p, arch string) binaryInfo {
	fi, err := os.Stat(p)
	if err != nil {
		return binaryInfo{problem: fmt.Sprintf("agent binary %s: %v", p, err)}
	}
	k := fmt.Sprintf("%s|%d|%d|%s", p, fi.Size(), fi.ModTime().UnixNano(), arch)
	if v, ok := binaryCache.Load(k); ok {
		return v.(binaryInfo)
	}
	info := inspectBinary(p, arch)
	binaryCache.Store(k, info)
	return info
}

var machines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "arm": elf.EM_ARM,
	"ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV,
}

func inspectBinary(p, arch string) binaryInfo {
	f, err := elf.Open(p)
	if err != nil {
		return binaryInfo{problem: fmt.Sprintf("agent binary %s is not an ELF executable: %v", p, err)}
	}
	defer f.Close()
	if want, ok := machines[arch]; ok && f.Machine != want {
		return binaryInfo{problem: fmt.Sprintf("agent binary %s is for %s, the image is %s", p, f.Machine, arch)}
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return binaryInfo{problem: fmt.Sprintf("agent binary %s is dynamically linked and may not load in the image; build it with CGO_ENABLED=0 and set environment.docker.agent_binary", p)}
		}
	}
	h := sha256.New()
	r, err := os.Open(p)
	if err != nil {
		return binaryInfo{problem: fmt.Sprintf("agent binary %s: %v", p, err)}
	}
	defer r.Close()
	n, err := io.Copy(h, r)
	if err != nil {
		return binaryInfo{problem: fmt.Sprintf("agent binary %s: %v", p, err)}
	}
	return binaryInfo{sha: hex.EncodeToString(h.Sum(nil)), size: n}
}

// agentBinary is the configured binary or the running executable.
func (e *Env) agentBinary() (string, error) {
	if e.cfg.AgentBinary != "" {
		return e.cfg.AgentBinary, nil
	}
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locate the running executable: %w", err)
	}
	return p, nil
}

// checkHelper finds the helper binary and checks it can run in the image; the problem, if
// any, is in the result.
func (e *Env) checkHelper() (string, binaryInfo) {
	bin, err := e.agentBinary()
	if err != nil {
		return "", binaryInfo{problem: err.Error()}
	}
	return bin, checkBinary(bin, e.imgArch)
}

// startAgent makes sure the helper in the container is the binary checked when the session
// started, installing it if not, and starts it. The error says why the helper cannot be
// used; the caller falls back to one exec per command.
func (e *Env) startAgent(ctx context.Context, id string) (*agentConn, error) {
	bin, info := e.helperBin, e.helper
	if info.problem != "" {
		return nil, errors.New(info.problem)
	}
	target := path.Join(markDir, "agent-"+info.sha[:16])
	if err := e.installAgent(ctx, id, bin, info.sha, target); err != nil {
		return nil, err
	}
	cmd := []string{target, "agent"}
	if !e.cfg.ReadOnlyRootfs {
		cmd = append(cmd, "--touch", lastUseFile)
	}
	cctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	x, err := e.cli.ContainerExecCreate(cctx, id, container.ExecOptions{
		User: e.cfg.User, Cmd: cmd, WorkingDir: "/",
		AttachStdin: true, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return nil, fmt.Errorf("docker exec create (helper): %w", err)
	}
	hij, err := e.cli.ContainerExecAttach(cctx, x.ID, container.ExecAttachOptions{})
	if err != nil {
		return nil, fmt.Errorf("docker exec attach (helper): %w", err)
	}
	a := &agentConn{hij: hij, execID: x.ID, stderr: backend.NewCappedBuffer(4 << 10), demuxed: make(chan struct{})}
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, a.stderr, hij.Reader)
		if err == nil {
			err = io.EOF
		}
		_ = pw.CloseWithError(err)
		close(a.demuxed)
	}()
	a.client = agent.NewClient(pr, &hijackWriter{hij: &a.hij}, agent.ClientOptions{Logger: e.log.Named("agent")})
	hctx, hcancel := context.WithTimeout(ctx, helloTimeout)
	defer hcancel()
	if err := a.client.Ready(hctx); err != nil {
		a.close(ctx)
		msg := strings.TrimSpace(string(a.stderr.Bytes()))
		if msg != "" {
			return nil, fmt.Errorf("helper did not start: %s", msg)
		}
		return nil, fmt.Errorf("helper did not start: %w", err)
	}
	e.log.Debug("helper started", "container", shortID(id), "path", target)
	return a, nil
}

// installScript makes sure, as root, that $2 is the helper with SHA-256 $3, in a directory
// $1 that only root can write, and installs it from stdin when it is not. Nothing found in
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

// installAgent makes sure target is the helper binary (digest sha), installing bin there if
// it is not, with an exec as root. The directory is the root-owned /.airlock: in a writable
// root filesystem a directory of the image's filesystem made when the container was created,
// with a read-only one a tmpfs of its own (the archive API cannot see into a tmpfs).
func (e *Env) installAgent(ctx context.Context, id, bin, sha, target string) error {
	f, err := os.Open(bin)
	if err != nil {
		return fmt.Errorf("agent binary: %w", err)
	}
	defer f.Close()
	res, err := e.rawExec(ctx, id, rawExec{
		user: "0:0", cmd: []string{"/bin/sh", "-c", installScript, "install", markDir, target, sha}, stdin: f,
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
