package ssh

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/helper"
)

// remoteHelper is the resident `airlock helper` on one long-lived session of a link.
type remoteHelper struct {
	session *gossh.Session
	client  *helper.Client
	stderr  *backend.CappedBuffer

	// envMu guards the environment built last for a request without variables of its
	// own, and the HOME and proxy variables it was built for (see env).
	envMu   sync.Mutex
	envKey  []string
	envLast []string
}

// env is a command's whole environment: the account's, the request's variables through the
// policy, the egress proxy's. Building it (the policy's checks and git overrides, the merge)
// costs tens of microseconds, a noticeable part of a short command, and without variables of
// the request's own it depends only on the account and the link, so it is kept and reused
// while those are unchanged. The slice returned is shared and never written to.
func (h *remoteHelper) env(home, user string, reqEnv map[string]string, proxy []string) []string {
	build := func() []string {
		env := append([]string{"HOME=" + home, "USER=" + user, "LOGNAME=" + user, "PATH=" + remotePath},
			(backend.EnvPolicy{}).Build(nil, reqEnv)...)
		return slices.Clip(helper.MergeEnv(env, proxy))
	}
	if len(reqEnv) > 0 {
		return build()
	}
	key := append([]string{home, user}, proxy...)
	h.envMu.Lock()
	defer h.envMu.Unlock()
	if h.envLast == nil || !slices.Equal(h.envKey, key) {
		h.envKey, h.envLast = key, build()
	}
	return h.envLast
}

func (h *remoteHelper) close() {
	_ = h.client.Close()
	_ = h.session.Close()
}

// helperBinary is the local helper binary, inspected once per Env.
type helperBinary struct {
	once sync.Once
	bin  *helper.Binary
	err  error
}

func (b *helperBinary) load(configured string) {
	b.once.Do(func() {
		p, err := helper.Executable(configured)
		if err != nil {
			b.err = fmt.Errorf("helper_binary: %w", err)
			return
		}
		b.bin, b.err = helper.Inspect(p)
	})
}

// helperName is the helper's file name in the remote cache, or "" when no helper is wanted
// or none can be had. A dynamically linked helper's loader and libraries go in the
// directory of the same name plus ".d".
func (e *Env) helperName() string {
	if e.cfg.Mode != ModeAuto {
		return ""
	}
	e.bin.load(e.cfg.HelperBinary)
	if e.bin.err != nil {
		return ""
	}
	return "helper-" + e.bin.bin.Digest
}

// startHelper starts the helper from the remote cache on a session of its own and waits for
// its hello. The script that starts it first checks the cache and the file (see
// [helperScript]); when the file is missing or not the right one it uploads the binary and
// tries once more. Any failure leaves the link in session mode.
func (e *Env) startHelper(ctx context.Context, l *link, p remoteInfo) error {
	name := e.helperName()
	if name == "" {
		return e.bin.err
	}
	if err := e.bin.bin.CheckUname(p.os); err != nil {
		return err
	}
	args := e.cfg.sandboxArgs(p.workspace, e.roots, l.proxyPort)
	h, err := e.launchHelper(ctx, l, name, args)
	var stale *staleHelperError
	if errors.As(err, &stale) {
		e.log.Debug("helper not in the remote cache", "reason", stale.why)
		if err := e.uploadHelper(ctx, l, name); err != nil {
			return err
		}
		h, err = e.launchHelper(ctx, l, name, args)
	}
	if err != nil {
		return err
	}
	l.helper = h
	// A helper that dies takes the link with it, so that the next call reconnects and
	// starts a fresh one.
	go func() {
		select {
		case <-h.client.Done():
			l.kill(fmt.Errorf("helper stream ended: %w", h.client.Err()))
		case <-l.dead:
		}
	}()
	e.log.Debug("helper started", "path", path.Join(p.home, ".cache/airlock", name))
	return nil
}

// staleHelperError is a cache that is safe to use but holds no usable helper: the file is
// missing, is not the user's own executable, or has another hash. Uploading fixes it.
type staleHelperError struct{ why string }

func (e *staleHelperError) Error() string { return "cached helper " + e.why }

// launchHelper runs [helperScript] on a new session and, once the script has vouched for
// the file and exec'd it, connects a client to the helper's stdio.
func (e *Env) launchHelper(ctx context.Context, l *link, name, args string) (*remoteHelper, error) {
	s, err := openSession(ctx, l)
	if err != nil {
		return nil, fmt.Errorf("helper session: %w", err)
	}
	stdin, err := s.StdinPipe()
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("helper stdin: %w", err)
	}
	stdout, err := s.StdoutPipe()
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("helper stdout: %w", err)
	}
	stderr := helper.NewStderr()
	s.Stderr = stderr
	nonce := newNonce()
	if err := s.Start(shellLine(helperScript(nonce, name, e.bin.bin, args))); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("start helper: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, helper.HelloTimeout)
	defer cancel()
	status, stream, err := readStatus(rctx, stdout, nonce)
	if err != nil {
		_ = s.Close()
		return nil, helper.StartError(err, stderr)
	}
	word, why, _ := strings.Cut(status, " ")
	switch word {
	case "ok":
	case "stale":
		_ = s.Close()
		return nil, &staleHelperError{why: why}
	case "refuse":
		_ = s.Close()
		return nil, fmt.Errorf("remote helper cache refused: %s", why)
	default:
		_ = s.Close()
		return nil, fmt.Errorf("helper did not start: unexpected status %q", status)
	}
	launched, err := helper.Launch(ctx, stream, stdin, stderr, e.log.Named("helper"))
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	return &remoteHelper{session: s, client: launched.Client, stderr: stderr}, nil
}

// uploadHelper copies the helper's files into the remote cache, each through a session's
// stdin (see [uploadScript]): the executable as name, a dynamically linked one's loader and
// libraries into name.d.
func (e *Env) uploadHelper(ctx context.Context, l *link, name string) error {
	start := time.Now()
	for i, f := range e.bin.bin.Files {
		target := name
		if i > 0 {
			target = name + ".d/" + f.Name
		}
		if err := e.uploadFile(ctx, l, f, target); err != nil {
			return err
		}
	}
	e.log.Info("helper uploaded", "name", name, "files", len(e.bin.bin.Files), "duration_ms", time.Since(start).Milliseconds())
	return nil
}

func (e *Env) uploadFile(ctx context.Context, l *link, file helper.File, target string) error {
	f, err := os.Open(file.Path)
	if err != nil {
		return fmt.Errorf("helper_binary: %w", err)
	}
	defer f.Close()
	uctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	nonce := newNonce()
	out, errOut, code, err := runShort(uctx, l, uploadScript(nonce, target, file.SHA256), f)
	if err != nil {
		return fmt.Errorf("upload helper: %w", err)
	}
	status, ok := statusLine(out, nonce)
	word, why, _ := strings.Cut(status, " ")
	switch {
	case code == 0 && word == "ok":
		return nil
	case word == "refuse":
		return fmt.Errorf("remote helper cache refused: %s", why)
	case ok:
		return fmt.Errorf("upload helper to ~/.cache/airlock/%s: %s", target, why)
	default:
		return fmt.Errorf("upload helper to ~/.cache/airlock/%s: exit %d: %s", target, code, strings.TrimSpace(string(errOut)))
	}
}

// helperCache is the shell prelude of [helperScript] and [uploadScript]. It makes sure
// that nobody but the user (and root) can write to the cache or to a directory on the way
// to it, since whoever can is able to swap the helper for a program of their own: $HOME and
// ~/.cache must be directories of the user's closed to group and others (symlinks to such
// are followed, as many move ~/.cache), ~/.cache/airlock must be a real directory, created
// 0700 or, when the user owns it, tightened to 0700. Otherwise it prints "<nonce> refuse
// <why>" and exits 3. It leaves the cache in $d and the helper's path in $f, and defines say
// (print a status line) and closed (is a file the user's and closed to group and others).
func helperCache(nonce, name string) string {
	return `umask 077
say() { printf '%s %s\n' ` + nonce + ` "$*"; }
u=$(id -u) || { say refuse "id -u failed"; exit 3; }
closed() { m=$(stat -c '%u %a' "$@" 2>/dev/null) && [ "${m%% *}" = "$u" ] && [ $(( 0${m#* } & 022 )) -eq 0 ]; }
dir() { [ -d "$1" ] && closed -L -- "$1"; }
case $HOME in /*) ;; *) say refuse "HOME ($HOME) is not an absolute path"; exit 3;; esac
dir "$HOME" || { say refuse "$HOME is not a directory owned by uid $u and closed to group and others"; exit 3; }
[ -e "$HOME/.cache" ] || [ -L "$HOME/.cache" ] || mkdir -m 700 -- "$HOME/.cache" 2>/dev/null
dir "$HOME/.cache" || { say refuse "$HOME/.cache is not a directory owned by uid $u and closed to group and others"; exit 3; }
d="$HOME/.cache/airlock"; f="$d/` + name + `"
[ -e "$d" ] || [ -L "$d" ] || mkdir -m 700 -- "$d" 2>/dev/null
if ! dir "$d" && [ -d "$d" ] && [ ! -L "$d" ] && [ "$(stat -c %u -- "$d")" = "$u" ]; then chmod 700 -- "$d"; fi
[ ! -L "$d" ] && dir "$d" || { say refuse "$d is not a directory (nor a symlink) owned by uid $u and closed to group and others"; exit 3; }
`
}

// helperScript checks the cache and the helper in it and, in the same script, execs it: the
// file must be a regular file (not a symlink) of the user's, executable, closed to group and
// others, with the expected SHA-256. Since only the user can write to the file and the
// directories above it, what was checked is what runs. It prints "<nonce> ok" right before
// the exec, after which the helper's stream begins; or "<nonce> stale <why>" when the file
// needs uploading; or "<nonce> refuse <why>" when the cache is not safe to use.
//
// The helper itself runs with an empty environment: it is handed each command's whole
// environment and must not leak its own.
func helperScript(nonce, name string, bin *helper.Binary, args string) string {
	var b strings.Builder
	b.WriteString(helperCache(nonce, name) + `if [ -L "$f" ] || [ ! -f "$f" ]; then say stale "is missing or not a regular file"; exit 3; fi
closed -- "$f" && [ -x "$f" ] || { say stale "is not an executable owned by uid $u and closed to group and others"; exit 3; }
s=$(sha256sum < "$f") && [ "${s%% *}" = ` + bin.Files[0].SHA256 + ` ] || { say stale "has another sha256"; exit 3; }
`)
	run := `"$f" ` + helper.Subcommand
	if !bin.Static() {
		b.WriteString(`l="$f.d"
{ [ ! -L "$l" ] && dir "$l"; } || { say stale "library directory $l is missing or not the user's and closed"; exit 3; }
`)
		for _, lib := range bin.Files[1:] {
			b.WriteString(`g="$l/` + lib.Name + `"
{ [ ! -L "$g" ] && [ -f "$g" ] && closed -- "$g"; } || { say stale "$g is missing or not the user's and closed"; exit 3; }
s=$(sha256sum < "$g") && [ "${s%% *}" = ` + lib.SHA256 + ` ] || { say stale "$g has another sha256"; exit 3; }
`)
		}
		run = `"$l/` + bin.Interp + `" --library-path "$l" "$f" ` + helper.Subcommand
	}
	b.WriteString(`say ok
exec env -i HOME="$HOME" PATH=` + remotePath + ` ` + run + args + `
`)
	return b.String()
}

// uploadScript writes stdin to a new file (mktemp: created exclusively, 0600, in the
// checked cache), checks its hash and renames it over the helper's name. It prints
// "<nonce> ok" on success; otherwise a "refuse" or "fail" status and exits 3.
func uploadScript(nonce, name, sum string) string {
	return helperCache(nonce, name) + `p="${f%/*}"
if [ "$p" != "$d" ]; then
	[ -e "$p" ] || [ -L "$p" ] || mkdir -m 700 -- "$p" 2>/dev/null
	{ [ ! -L "$p" ] && dir "$p"; } || { say refuse "$p is not a directory (nor a symlink) owned by uid $u and closed to group and others"; exit 3; }
fi
if [ -d "$f" ] && [ ! -L "$f" ]; then say fail "$f is a directory"; exit 3; fi
t=$(mktemp "$p/.helper-XXXXXXXXXX") || { say fail "mktemp in $p failed"; exit 3; }
if cat > "$t" && chmod 700 -- "$t" && s=$(sha256sum < "$t") && [ "${s%% *}" = ` + sum + ` ]; then
	# mv would move into a directory that a symlink at $f points to.
	[ ! -L "$f" ] || rm -f -- "$f"
	mv -f -- "$t" "$f" && { say ok; exit 0; }
fi
rm -f -- "$t"
say fail "could not write and verify $f"
exit 3
`
}

// statusLine finds the line "<nonce> <status>" in out.
func statusLine(out []byte, nonce string) (string, bool) {
	_, after, ok := bytes.Cut(out, []byte(nonce+" "))
	if !ok {
		return "", false
	}
	line, _, _ := bytes.Cut(after, []byte("\n"))
	return string(line), true
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
	areq := helper.Request{
		Argv:           req.Argv,
		Command:        req.Command,
		Dir:            dir,
		Workspace:      ws,
		Env:            h.env(home, e.cfg.User, req.Env, l.proxyEnv()),
		Stdin:          req.Stdin,
		Timeout:        timeout,
		KillGrace:      e.cfg.KillGrace,
		MaxOutputBytes: capBytes,
		Stdout:         req.Stdout,
		Stderr:         req.Stderr,
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
	e.log.Debug("exec finished", "mode", ModeHelper, "exit_code", res.ExitCode,
		"duration_ms", res.Duration.Milliseconds(), "timed_out", res.TimedOut, "cancelled", res.Cancelled)
	return res, nil
}

// readStatus reads r up to and including the line "<nonce> <status>" and returns the status
// and a reader of what follows. It gives up when ctx ends (the caller then closes what feeds
// r).
func readStatus(ctx context.Context, r io.Reader, nonce string) (string, io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	type found struct {
		status string
		err    error
	}
	done := make(chan found, 1)
	go func() {
		want := nonce + " "
		var tail []byte
		for {
			b, err := br.ReadByte()
			if err != nil {
				done <- found{err: err}
				return
			}
			tail = append(tail, b)
			if len(tail) > len(want) {
				tail = tail[1:]
			}
			if string(tail) == want {
				line, err := br.ReadString('\n')
				done <- found{status: strings.TrimSuffix(line, "\n"), err: err}
				return
			}
		}
	}()
	select {
	case f := <-done:
		if f.err != nil {
			return "", nil, fmt.Errorf("no start marker: %w", f.err)
		}
		return f.status, br, nil
	case <-ctx.Done():
		return "", nil, fmt.Errorf("no start marker: %w", ctx.Err())
	}
}
