package docker

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
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
	if _, err := io.Copy(h, r); err != nil {
		return binaryInfo{problem: fmt.Sprintf("agent binary %s: %v", p, err)}
	}
	return binaryInfo{sha: hex.EncodeToString(h.Sum(nil))}
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

// startAgent installs the helper in the container if it is not there yet and starts it. The
// error says why the helper cannot be used; the caller falls back to one exec per command.
func (e *Env) startAgent(ctx context.Context, id string) (*agentConn, error) {
	bin, err := e.agentBinary()
	if err != nil {
		return nil, err
	}
	info := checkBinary(bin, e.imgArch)
	if info.problem != "" {
		return nil, errors.New(info.problem)
	}
	target := e.markPath("agent-" + info.sha[:16])
	if err := e.installAgent(ctx, id, bin, target); err != nil {
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

// installAgent copies the binary to target unless it is already there. Into a writable root
// filesystem it goes through the archive API, root-owned and out of reach of commands; with
// a read-only one, through an exec as root into the /tmp tmpfs (which the archive API cannot
// see).
func (e *Env) installAgent(ctx context.Context, id, bin, target string) error {
	if e.cfg.ReadOnlyRootfs {
		return e.installAgentByExec(ctx, id, bin, target)
	}
	sctx, cancel := context.WithTimeout(ctx, apiTimeout)
	_, err := e.cli.ContainerStatPath(sctx, id, target)
	cancel()
	if err == nil {
		return nil
	}
	if !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("docker stat %s: %w", target, err)
	}
	f, err := os.Open(bin)
	if err != nil {
		return fmt.Errorf("agent binary: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("agent binary: %w", err)
	}
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		now := time.Now()
		err := tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(markDir, "/") + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: now})
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(target, "/"), Typeflag: tar.TypeReg, Mode: 0o755, Size: fi.Size(), ModTime: now})
		}
		if err == nil {
			_, err = io.Copy(tw, f)
		}
		if err == nil {
			err = tw.Close()
		}
		_ = pw.CloseWithError(err)
	}()
	cctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	if err := e.cli.CopyToContainer(cctx, id, "/", pr, container.CopyToContainerOptions{}); err != nil {
		_ = pr.CloseWithError(err)
		return fmt.Errorf("docker copy helper to %s: %w", target, err)
	}
	return nil
}

// installScript writes stdin to $1 unless an executable is already there.
const installScript = `t=$1; [ -x "$t" ] && exit 0; umask 022; mkdir -p "${t%/*}" && cat > "$t.$$" && chmod 755 "$t.$$" && mv -f "$t.$$" "$t"`

func (e *Env) installAgentByExec(ctx context.Context, id, bin, target string) error {
	f, err := os.Open(bin)
	if err != nil {
		return fmt.Errorf("agent binary: %w", err)
	}
	defer f.Close()
	res, err := e.rawExec(ctx, id, rawExec{
		user: "0:0", cmd: []string{"/bin/sh", "-c", installScript, "install", target}, stdin: f,
	})
	if err != nil {
		return fmt.Errorf("install helper: %w", err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("install helper to %s: exit %d: %s", target, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	return nil
}
