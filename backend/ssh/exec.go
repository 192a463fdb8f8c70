package ssh

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/airlock-dev/airlock/backend"
)

// remotePath is the PATH commands get; the remote user's profile is not read, so it is not
// theirs unless login_shell is set.
const remotePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// pipeDrain bounds how long Exec waits for the session to end after the process group was
// killed; only a process that left the group can hold its output open longer.
const pipeDrain = 2 * time.Second

// signalTimeout bounds the short session that signals a process group.
const signalTimeout = 5 * time.Second

// Exec runs req on the remote host, through the resident helper when it is in use and on a
// session of its own otherwise.
func (e *Env) Exec(ctx context.Context, req backend.Request) (backend.Result, error) {
	if err := req.Validate(); err != nil {
		return backend.Result{}, err
	}
	if e.isClosed() {
		return backend.Result{}, backend.ErrClosed
	}
	dir, err := e.workDir(req.Dir)
	if err != nil {
		return backend.Result{}, err
	}
	timeout, capBytes := req.Effective(e.cfg.DefaultTimeout, e.cfg.MaxOutputBytes)
	// Reconnecting counts against the command's time.
	cctx, cancel := context.WithTimeout(ctx, timeout)
	l, reconnected, err := e.current(cctx)
	cancel()
	if err != nil {
		return backend.Result{}, err
	}
	var res backend.Result
	for attempt := 0; ; attempt++ {
		if l.helper != nil {
			res, err = e.execHelper(ctx, l, req, dir, timeout, capBytes)
		} else {
			res, err = e.execSession(ctx, l, req, dir, timeout, capBytes)
		}
		// A link that died before the command started (the keepalive had not noticed yet)
		// is retried once on a new connection; one that died while it ran is not, since the
		// command may have had effects.
		var ns *notStartedError
		if attempt > 0 || !errors.As(err, &ns) || l.alive() {
			break
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		l, _, err = e.current(cctx)
		cancel()
		if err != nil {
			return backend.Result{}, err
		}
		reconnected = true
	}
	if reconnected && err == nil {
		res.Notes = append(res.Notes, "reconnected to "+e.cfg.target()+" before the command ran")
	}
	if err == nil {
		e.mu.Lock()
		res.Notes, e.owed = append(e.owed, res.Notes...), nil
		e.mu.Unlock()
	}
	return res, err
}

// notStartedError marks a failure before the command could have started.
type notStartedError struct{ err error }

func (e *notStartedError) Error() string { return e.err.Error() }
func (e *notStartedError) Unwrap() error { return e.err }

// workDir confines the working directory to the workspace by name; the remote side then
// resolves symlinks and checks again.
func (e *Env) workDir(dir string) (string, error) {
	ws := e.Workspace()
	p, err := backend.WorkDir(ws, dir)
	if errors.Is(err, backend.ErrOutsideWorkspace) && ws != e.cfg.Workdir {
		// Also accept paths spelled with the configured (unresolved) workdir.
		if q, err2 := backend.WorkDir(e.cfg.Workdir, dir); err2 == nil {
			return q, nil
		}
	}
	return p, err
}

// execSession runs one command on a session of its own.
func (e *Env) execSession(ctx context.Context, l *link, req backend.Request, dir string, timeout time.Duration, capBytes int64) (backend.Result, error) {
	select {
	case e.sessions <- struct{}{}:
	case <-ctx.Done():
		return backend.Result{Cancelled: true, ExitCode: -1}, nil
	}
	defer func() { <-e.sessions }()
	s, err := openSession(ctx, l)
	if err != nil {
		return backend.Result{}, &notStartedError{err: fmt.Errorf("ssh: session: %w", err)}
	}
	defer s.Close()

	nonce := newNonce()
	stdout := backend.NewCappedBuffer(capBytes)
	stderr := backend.NewCappedBuffer(capBytes)
	outF := &markerWriter{nonce: []byte(nonce), w: stdout}
	errF := &markerWriter{nonce: []byte(nonce), w: stderr, lines: make(chan string, 1), exited: make(chan int, 1)}
	s.Stdout, s.Stderr = outF, errF
	if req.Stdin != nil {
		s.Stdin = req.Stdin
	}
	proxyEnv, releaseProxy := e.callProxy(ctx, l)
	defer releaseProxy()
	start := time.Now()
	if err := s.Start(shellLine(e.commandScript(nonce, dir, req, proxyEnv))); err != nil {
		return backend.Result{}, &notStartedError{err: fmt.Errorf("ssh: start: %w", unavailable(l, err))}
	}
	end := e.await(ctx, l, s, errF, timeout)
	outF.flush()
	errF.flush()
	res := backend.Captured(stdout, stderr)
	res.Duration, res.TimedOut, res.Cancelled = time.Since(start), end.timedOut, end.cancelled
	// What the wrapper reported before the command: refused directory, or its group.
	switch word, rest := errF.status(); word {
	case "nodir":
		return backend.Result{}, fmt.Errorf("%w: working directory %s does not exist on the remote host", backend.ErrInvalidRequest, dir)
	case "outside":
		return backend.Result{}, fmt.Errorf("%w: working directory %q resolves to %s", backend.ErrOutsideWorkspace, req.Dir, rest)
	}
	if err := e.exitStatus(l, end, &res); err != nil {
		return res, err
	}
	e.log.Debug("exec finished", "mode", ModeSession, "exit_code", res.ExitCode,
		"duration_ms", res.Duration.Milliseconds(), "timed_out", end.timedOut, "cancelled", end.cancelled)
	return res, nil
}

// sessionEnd is how a command's session ended.
type sessionEnd struct {
	waitErr             error
	trailerCode         int // the exit the wrapper reported, -1 before it did
	timedOut, cancelled bool
	// cut is true when the command exited but a process outside its group held its output,
	// and the session was closed without waiting for it.
	cut bool
}

// await waits for a started session to end: by itself, by the command's exit while a
// setsid child holds its output (cut after pipeDrain), by the timeout or by cancellation
// (both stopped through [Env.stop]).
func (e *Env) await(ctx context.Context, l *link, s *gossh.Session, errF *markerWriter, timeout time.Duration) sessionEnd {
	waitCh := make(chan error, 1)
	go func() { waitCh <- s.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	end := sessionEnd{trailerCode: -1}
	exited := errF.exited
	var drain <-chan time.Time
	for {
		select {
		case end.waitErr = <-waitCh:
			return end
		case end.trailerCode = <-exited:
			// The command has exited. The session ends as soon as nothing holds its output:
			// at once, unless a child that left the command's group still does.
			exited, drain = nil, time.After(pipeDrain)
		case <-drain:
			// Return with the command's own exit, as helper mode does, and end what holds
			// the output: the command's group (should the trailer have been the command's
			// own forgery) and the session.
			end.cut = true
			if pgid, ok := errF.pgid(nil); ok {
				e.signal(l, pgid, "KILL")
			}
			_ = s.Close()
			<-waitCh
			return end
		case <-timer.C:
			end.timedOut = true
			end.waitErr = e.stop(l, s, errF, waitCh)
			return end
		case <-ctx.Done():
			end.cancelled = true
			end.waitErr = e.stop(l, s, errF, waitCh)
			return end
		}
	}
}

// exitStatus sets res's exit code from how the session ended; an error when the
// connection was lost while the command ran.
func (e *Env) exitStatus(l *link, end sessionEnd, res *backend.Result) error {
	var ee *gossh.ExitError
	var missing *gossh.ExitMissingError
	switch {
	case end.cut:
		res.ExitCode = end.trailerCode
		res.Notes = append(res.Notes, "the command exited while a process it started outside its process group (setsid) still held its output: returned without waiting for it; in session mode it may still be running")
	case end.waitErr == nil:
		res.ExitCode = 0
	case errors.As(end.waitErr, &ee):
		res.ExitCode = exitCode(ee)
	case !l.confirmAlive():
		return fmt.Errorf("ssh: %s: the connection was lost while the command ran; its output is incomplete and it may still be running: %w",
			e.cfg.target(), unavailable(l, end.waitErr))
	case errors.As(end.waitErr, &missing):
		res.ExitCode = -1
	default:
		// A copy error after a clean exit, e.g. stdin the command never read.
		res.ExitCode = 0
	}
	if (end.timedOut || end.cancelled) && res.ExitCode == 0 {
		res.ExitCode = -1
	}
	return nil
}

// stop ends a command that ran out of time or was cancelled: TERM to its process group, the
// grace period, KILL, then at most pipeDrain for the session to end. It returns the
// session's wait error.
func (e *Env) stop(l *link, s *gossh.Session, errF *markerWriter, waitCh <-chan error) error {
	grace := time.NewTimer(e.cfg.KillGrace)
	defer grace.Stop()
	pgid, ok := errF.pgid(grace.C)
	if !ok {
		// The command never started (or never said so): ending the session is enough.
		_ = s.Close()
		return <-waitCh
	}
	e.signal(l, pgid, "TERM")
	select {
	case err := <-waitCh:
		return err
	case <-grace.C:
	case <-l.dead:
	}
	e.signal(l, pgid, "KILL")
	select {
	case err := <-waitCh:
		return err
	case <-time.After(pipeDrain):
		_ = s.Close()
		return <-waitCh
	}
}

// signal sends sig to the remote process group pgid through a short session of its own.
func (e *Env) signal(l *link, pgid int, sig string) {
	ctx, cancel := context.WithTimeout(context.Background(), signalTimeout)
	defer cancel()
	_, _, _, err := runShort(ctx, l, "kill -"+sig+" -"+strconv.Itoa(pgid)+" 2>/dev/null; exit 0", nil)
	if err != nil {
		e.log.Warn("signal process group", "pgid", pgid, "signal", sig, "error", err)
	}
}

// openSession opens a session, waiting while the server refuses one for lack of room: sshd
// counts a session against MaxSessions until it has processed its close, which can be a
// moment after the client closed it, and answers "open failed" meanwhile.
func openSession(ctx context.Context, l *link) (*gossh.Session, error) {
	for {
		s, err := l.client.NewSession()
		var oce *gossh.OpenChannelError
		if err == nil || !errors.As(err, &oce) || (oce.Reason != gossh.Prohibited && oce.Reason != gossh.ConnectionFailed) {
			if err != nil {
				return nil, unavailable(l, err)
			}
			return s, nil
		}
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", err, ctx.Err())
		case <-l.dead:
			return nil, unavailable(l, err)
		}
	}
}

// exitCode maps an ExitError to a shell-style code: 128+N for death by signal N.
func exitCode(ee *gossh.ExitError) int {
	if sig := ee.Signal(); sig != "" {
		if n, ok := signalNumbers[sig]; ok {
			return 128 + n
		}
		return 128
	}
	return ee.ExitStatus()
}

var signalNumbers = map[string]int{"HUP": 1, "INT": 2, "QUIT": 3, "ABRT": 6, "KILL": 9, "SEGV": 11, "PIPE": 13, "ALRM": 14, "TERM": 15}

// commandScript is the POSIX sh program that runs one command: enter the directory (real
// path, checked against the workspace), start the command in a session and process group of
// its own with only the variables it may see, report that group, wait, and kill what the
// command left behind in its group.
//
// The first line each stream carries from the wrapper is the nonce, so that whatever the
// user's dotfiles print before it is dropped. stdin reaches the command through fd 3 because
// an asynchronous list's stdin is /dev/null.
func (e *Env) commandScript(nonce, dir string, req backend.Request, extra []string) string {
	ws := e.Workspace()
	var b strings.Builder
	b.WriteString("cd -P -- " + quote(dir) + " 2>/dev/null || { printf '%s nodir\\n' " + nonce + " >&2; exit 1; }\n")
	if ws != "/" {
		b.WriteString("case $PWD in " + quote(ws) + "|" + quote(ws) + "/*) ;; *) printf '%s outside %s\\n' " + nonce + " \"$PWD\" >&2; exit 1;; esac\n")
	}
	b.WriteString("umask " + fmt.Sprintf("%04o", backend.Umask) + "\nexec 3<&0\n")
	b.WriteString(`/bin/sh -c 'printf "%s pgid %s\n" "$1" "$$" >&2; printf "%s\n" "$1"; shift; exec setsid "$@"' sh ` + nonce + " ")
	b.WriteString(strings.Join(e.commandWords(req, extra), " "))
	// The wrapper's own stderr then goes nowhere, so that no shell reports "Terminated" for
	// a command killed at its timeout; fd 4 keeps the stream for the exit trailer, which lets
	// the client return when the command exits even while a child of it that left its group
	// still holds the session's output open.
	b.WriteString(" 0<&3 3<&- &\np=$!\nexec 3<&- 4>&2 2>/dev/null\nwait $p; r=$?\nkill -KILL -$p\n")
	b.WriteString("printf '\\n%s exit %s\\n' " + nonce + " \"$r\" >&4\nexit $r\n")
	return b.String()
}

// commandWords is `env -i VARS… PROGRAM ARGS…` as shell words for the wrapper, which expands
// the remote account's own HOME, USER, LOGNAME and SHELL.
// extra (the proxy variables) comes last, so that it wins over the request's own.
func (e *Env) commandWords(req backend.Request, extra []string) []string {
	words := []string{"env", "-i", "--", `HOME="$HOME"`, `USER="$USER"`, `LOGNAME="$LOGNAME"`, "PATH=" + remotePath}
	for _, kv := range append((backend.EnvPolicy{}).Build(nil, req.Env), extra...) {
		words = append(words, quote(kv))
	}
	switch {
	case e.cfg.LoginShell && req.Command != "":
		words = append(words, `"$SHELL"`, "-l", "-c", quote(req.Command))
	case e.cfg.LoginShell:
		words = append(words, `"$SHELL"`, "-l", "-c", quote(`exec "$@"`), "airlock")
		for _, a := range req.Argv {
			words = append(words, quote(a))
		}
	case req.Command != "":
		words = append(words, "/bin/sh", "-c", quote(req.Command))
	default:
		if strings.Contains(req.Argv[0], "=") {
			// env would take it for an assignment.
			words = append(words, "/bin/sh", "-c", quote(`exec "$@"`), "sh")
		}
		for _, a := range req.Argv {
			words = append(words, quote(a))
		}
	}
	return words
}

// shellLine is the string sshd hands to the user's login shell: as small as possible, and
// the same whatever that shell is.
func shellLine(script string) string { return "exec /bin/sh -c " + quote(script) }

// quote single-quotes s for a POSIX shell.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func newNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "airlock-" + hex.EncodeToString(b)
}

// markerWriter drops what a stream carries before the wrapper's marker line (the nonce,
// then an optional status, then a newline) and passes everything after it on. For stderr
// the status line is kept: "pgid N", "nodir" or "outside PATH".
type markerWriter struct {
	nonce []byte
	w     io.Writer
	lines chan string // receives the status line once, when set
	// exited, when set, receives the command's exit code from the wrapper's trailer
	// ("\n<nonce> exit N\n", cut from the stream) once the command has exited.
	exited chan int

	mu    sync.Mutex
	found bool
	buf   []byte
	line  string
	tail  []byte // held back after the marker: it may be the start of the trailer
	ended bool   // the trailer was seen
}

// maxNoise bounds what is held while looking for the marker.
const maxNoise = 64 << 10

func (m *markerWriter) Write(p []byte) (int, error) {
	m.mu.Lock()
	if m.found {
		defer m.mu.Unlock()
		return len(p), m.pass(p)
	}
	m.buf = append(m.buf, p...)
	i := bytes.Index(m.buf, m.nonce)
	if i < 0 {
		if keep := len(m.nonce) - 1; len(m.buf) > keep {
			m.buf = append(m.buf[:0], m.buf[len(m.buf)-keep:]...)
		}
		m.mu.Unlock()
		return len(p), nil
	}
	j := bytes.IndexByte(m.buf[i:], '\n')
	if j < 0 {
		if len(m.buf)-i > maxNoise {
			m.buf = m.buf[:0] // not a marker line after all
		}
		m.mu.Unlock()
		return len(p), nil
	}
	m.found = true
	m.line = strings.TrimSpace(string(m.buf[i+len(m.nonce) : i+j]))
	rest := m.buf[i+j+1:]
	m.buf = nil
	if m.lines != nil {
		m.lines <- m.line
	}
	defer m.mu.Unlock()
	if len(rest) > 0 {
		_ = m.pass(rest)
	}
	return len(p), nil
}

// pass writes what follows the marker line on, cutting out the exit trailer where exited is
// set. It holds back a tail that could be the trailer's beginning; flush writes it.
func (m *markerWriter) pass(p []byte) error {
	if m.exited == nil || m.ended {
		_, err := m.w.Write(p)
		return err
	}
	data := append(m.tail, p...)
	m.tail = nil
	trailer := append([]byte("\n"), m.nonce...)
	trailer = append(trailer, " exit "...)
	if i := bytes.Index(data, trailer); i >= 0 {
		j := bytes.IndexByte(data[i+len(trailer):], '\n')
		if j < 0 {
			m.tail = append([]byte(nil), data[i:]...)
			_, err := m.w.Write(data[:i])
			return err
		}
		code, err := strconv.Atoi(string(data[i+len(trailer) : i+len(trailer)+j]))
		if err != nil {
			code = -1
		}
		m.ended = true
		m.exited <- code
		if _, err := m.w.Write(data[:i]); err != nil {
			return err
		}
		_, err = m.w.Write(data[i+len(trailer)+j+1:]) // what a leftover child wrote after
		return err
	}
	keep := min(len(data), len(trailer)-1)
	m.tail = append([]byte(nil), data[len(data)-keep:]...)
	_, err := m.w.Write(data[:len(data)-keep])
	return err
}

// flush writes what pass held back, once the stream has ended.
func (m *markerWriter) flush() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.tail) > 0 {
		_, _ = m.w.Write(m.tail)
		m.tail = nil
	}
}

// status returns the first word of the status line and the rest.
func (m *markerWriter) status() (string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, rest, _ := strings.Cut(m.line, " ")
	return w, rest
}

// pgid waits until the wrapper reported the command's process group, or until give-up fires.
func (m *markerWriter) pgid(giveUp <-chan time.Time) (int, bool) {
	var line string
	select {
	case line = <-m.lines:
		m.lines <- line // keep it for others
	case <-giveUp:
		return 0, false
	}
	w, rest, _ := strings.Cut(line, " ")
	n, err := strconv.Atoi(rest)
	if w != "pgid" || err != nil || n <= 1 {
		return 0, false
	}
	return n, true
}
