package ssh

import (
	"bufio"
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

	gossh "golang.org/x/crypto/ssh"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/agent"
)

// helperReady bounds the wait for a started helper's hello.
const helperReady = 10 * time.Second

// helper is the resident `airlock agent` on one long-lived session of a link.
type helper struct {
	session *gossh.Session
	client  *agent.Client
	stderr  *backend.CappedBuffer
}

func (h *helper) close() {
	_ = h.client.Close()
	_ = h.session.Close()
}

// helperBinary is the local helper binary, hashed once per Env.
type helperBinary struct {
	once sync.Once
	path string
	sum  string // hex SHA-256
	arch string // uname -m spelling of its machine
	err  error
}

// unameMachine maps ELF machines to what `uname -m` prints.
var unameMachine = map[elf.Machine]string{
	elf.EM_X86_64:  "x86_64",
	elf.EM_AARCH64: "aarch64",
	elf.EM_386:     "i686",
	elf.EM_ARM:     "armv7l",
	elf.EM_RISCV:   "riscv64",
	elf.EM_PPC64:   "ppc64le",
	elf.EM_S390:    "s390x",
}

func (b *helperBinary) load(configured string) {
	b.once.Do(func() {
		p := configured
		if p == "" {
			exe, err := os.Executable()
			if err != nil {
				b.err = fmt.Errorf("agent_binary: %w", err)
				return
			}
			if strings.HasSuffix(exe, ".test") {
				b.err = errors.New("agent_binary: the running executable is a test binary; set agent_binary")
				return
			}
			p = exe
		}
		f, err := elf.Open(p)
		if err != nil {
			b.err = fmt.Errorf("agent_binary %s: not a linux executable: %w", p, err)
			return
		}
		b.arch = unameMachine[f.Machine]
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				b.err = fmt.Errorf("agent_binary %s is dynamically linked; build it with CGO_ENABLED=0", p)
			}
		}
		_ = f.Close()
		if b.err != nil {
			return
		}
		data, err := os.Open(p)
		if err != nil {
			b.err = fmt.Errorf("agent_binary: %w", err)
			return
		}
		defer data.Close()
		h := sha256.New()
		if _, err := io.Copy(h, data); err != nil {
			b.err = fmt.Errorf("agent_binary: %w", err)
			return
		}
		b.path, b.sum = p, hex.EncodeToString(h.Sum(nil))
	})
}

// helperName is the helper's file name in the remote cache, or "" when no helper is wanted
// or none can be had.
func (e *Env) helperName() string {
	if e.cfg.Mode != ModeAuto {
		return ""
	}
	e.bin.load(e.cfg.AgentBinary)
	if e.bin.err != nil {
		return ""
	}
	return "agent-" + e.bin.sum
}

// startHelper makes sure the helper is in the remote cache (uploading it over a session's
// stdin when the probe found no file with the right hash), starts it on a session of its
// own and waits for its hello. Any failure leaves the link in session mode.
func (e *Env) startHelper(ctx context.Context, l *link, p remoteInfo) error {
	name := e.helperName()
	if name == "" {
		return e.bin.err
	}
	if os, arch, _ := strings.Cut(p.os, " "); os != "Linux" || arch != e.bin.arch {
		return fmt.Errorf("remote is %q, agent_binary is linux %s", p.os, e.bin.arch)
	}
	remote := path.Join(p.home, ".cache/airlock", name)
	if p.agentSum != e.bin.sum {
		if err := e.uploadHelper(ctx, l, name); err != nil {
			return err
		}
	}

	s, err := openSession(ctx, l)
	if err != nil {
		return fmt.Errorf("helper session: %w", err)
	}
	stdin, err := s.StdinPipe()
	if err != nil {
		_ = s.Close()
		return fmt.Errorf("helper stdin: %w", err)
	}
	stdout, err := s.StdoutPipe()
	if err != nil {
		_ = s.Close()
		return fmt.Errorf("helper stdout: %w", err)
	}
	stderr := backend.NewCappedBuffer(16 << 10)
	s.Stderr = stderr
	// The helper itself runs with an empty environment: it is handed each command's whole
	// environment and must not leak its own.
	// The marker line lets the stream start after whatever the user's dotfiles printed.
	nonce := newNonce()
	cmd := "printf '%s\\n' " + nonce + `; exec env -i HOME="$HOME" PATH=` + remotePath + " " + quote(remote) + " agent"
	if err := s.Start(shellLine(cmd)); err != nil {
		_ = s.Close()
		return fmt.Errorf("start helper: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, helperReady)
	defer cancel()
	stream, err := skipToMarker(rctx, stdout, nonce)
	if err != nil {
		_ = s.Close()
		return fmt.Errorf("helper did not start: %w (stderr: %s)", err, strings.TrimSpace(string(stderr.Bytes())))
	}
	c := agent.NewClient(stream, stdin, agent.ClientOptions{Logger: e.log.Named("agent")})
	if err := c.Ready(rctx); err != nil {
		_ = c.Close()
		_ = s.Close()
		if msg := strings.TrimSpace(string(stderr.Bytes())); msg != "" {
			return fmt.Errorf("helper did not start: %w (stderr: %s)", err, msg)
		}
		return fmt.Errorf("helper did not start: %w", err)
	}
	h := &helper{session: s, client: c, stderr: stderr}
	l.helper = h
	// A helper that dies takes the link with it, so that the next call reconnects and
	// starts a fresh one.
	go func() {
		select {
		case <-c.Done():
			l.kill(fmt.Errorf("helper stream ended: %w", c.Err()))
		case <-l.dead:
		}
	}()
	e.log.Debug("helper started", "path", remote)
	return nil
}

// uploadHelper copies the helper binary to the remote cache through a session's stdin,
// under a temporary name that is renamed into place only once its hash checks out.
func (e *Env) uploadHelper(ctx context.Context, l *link, name string) error {
	f, err := os.Open(e.bin.path)
	if err != nil {
		return fmt.Errorf("agent_binary: %w", err)
	}
	defer f.Close()
	script := `umask 077; d="$HOME/.cache/airlock"; t="$d/.` + name + `.$$"
mkdir -p "$d" && cat > "$t" && chmod 700 "$t" && s=$(sha256sum < "$t") && [ "${s%% *}" = ` + e.bin.sum + ` ] && mv -f "$t" "$d/` + name + `" && exit 0
rm -f "$t"; exit 1`
	start := time.Now()
	uctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	_, errOut, code, err := runShort(uctx, l, script, f)
	if err != nil {
		return fmt.Errorf("upload helper: %w", err)
	}
	if code != 0 {
		return fmt.Errorf("upload helper to ~/.cache/airlock/%s: exit %d: %s", name, code, strings.TrimSpace(string(errOut)))
	}
	e.log.Info("helper uploaded", "name", name, "duration_ms", time.Since(start).Milliseconds())
	return nil
}

// execHelper runs one command through the resident helper.
func (e *Env) execHelper(ctx context.Context, l *link, req backend.Request, dir string, timeout time.Duration, capBytes int64) (backend.Result, error) {
	h := l.helper
	if h.client.Err() != nil || !l.alive() {
		return backend.Result{}, &notStartedError{err: unavailable(l, h.client.Err())}
	}
	e.mu.Lock()
	ws, home, shell := e.workspace, e.home, e.shell
	e.mu.Unlock()
	env := append([]string{"HOME=" + home, "USER=" + e.cfg.User, "LOGNAME=" + e.cfg.User, "PATH=" + remotePath},
		(backend.EnvPolicy{}).Build(nil, req.Env)...)
	areq := agent.Request{
		Argv:           req.Argv,
		Command:        req.Command,
		Dir:            dir,
		Workspace:      ws,
		Env:            dedupEnv(env),
		Stdin:          req.Stdin,
		Timeout:        timeout,
		KillGrace:      e.cfg.KillGrace,
		MaxOutputBytes: capBytes,
	}
	if e.cfg.LoginShell {
		if req.Command != "" {
			areq.Command, areq.Argv = "", []string{shell, "-l", "-c", req.Command}
		} else {
			areq.Argv = append([]string{shell, "-l", "-c", `exec "$@"`, "airlock"}, req.Argv...)
		}
	}
	res, err := h.client.Exec(ctx, areq)
	if err != nil && errors.Is(err, backend.ErrUnavailable) {
		l.kill(err) // a no-op when the link died first, whose reason then stands
		return backend.Result{}, fmt.Errorf("ssh: %s: the connection to the helper was lost while the command ran; its output is incomplete: %w",
			e.cfg.target(), unavailable(l, err))
	}
	if err != nil {
		return backend.Result{}, fmt.Errorf("ssh: %w", err)
	}
	e.log.Debug("exec finished", "mode", ModeAgent, "exit_code", res.ExitCode,
		"duration_ms", res.Duration.Milliseconds(), "timed_out", res.TimedOut, "cancelled", res.Cancelled)
	return res, nil
}

// dedupEnv keeps the last value of each name, in first-seen order.
func dedupEnv(env []string) []string {
	idx := map[string]int{}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[name]; ok {
			out[i] = kv
			continue
		}
		idx[name] = len(out)
		out = append(out, kv)
	}
	return out
}

// skipToMarker reads r up to and including the line "nonce\n" and returns a reader of what
// follows. It gives up when ctx ends (the caller then closes what feeds r).
func skipToMarker(ctx context.Context, r io.Reader, nonce string) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	found := make(chan error, 1)
	go func() {
		want := nonce + "\n"
		var tail []byte
		for {
			b, err := br.ReadByte()
			if err != nil {
				found <- err
				return
			}
			tail = append(tail, b)
			if len(tail) > len(want) {
				tail = tail[1:]
			}
			if string(tail) == want {
				found <- nil
				return
			}
		}
	}()
	select {
	case err := <-found:
		if err != nil {
			return nil, fmt.Errorf("no start marker: %w", err)
		}
		return br, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("no start marker: %w", ctx.Err())
	}
}
