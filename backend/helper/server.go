package helper

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/procgroup"
	"github.com/airlock-dev/airlock/backend/sandbox"
	"github.com/airlock-dev/airlock/backend/sockowner"
)

// ServeOptions adjusts the server.
type ServeOptions struct {
	// Shell runs Request.Command as Shell -c COMMAND (default /bin/sh).
	Shell string
	// TouchFile, when set, has its modification time set to now whenever a command starts,
	// so that a garbage collector outside can tell when the helper was last used.
	TouchFile string
	// Logger receives diagnostics (default: none). It must not write to the stream.
	Logger hclog.Logger
	// Sandbox, when set, confines every command (see sandbox.go); TempDir is then the
	// commands' private TMPDIR.
	Sandbox *sandbox.Sandbox
	TempDir string
	// Spawner, when set, starts every command as another user than the helper's real one
	// (see runas.go); it excludes Sandbox.
	Spawner *Spawner
	// Isolation says what isolates the helper itself (its namespaces), for the hello; a
	// helper that has some counts as enforcing whatever Sandbox says.
	Isolation []string
}

// Serve reads requests from r and answers on w until r ends, ctx is done or the framing
// breaks. Whatever is still running when it returns has been killed. A clean end of r
// returns nil.
func Serve(ctx context.Context, r io.Reader, w io.Writer, opts ServeOptions) error {
	if opts.Shell == "" {
		opts.Shell = "/bin/sh"
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	s := &server{opts: opts, w: w, procs: map[uint32]*proc{}, owners: sockowner.New()}
	s.tunnels = newTunnelSet(s.send)
	enforced, notes := sandboxHello(opts)
	if err := s.send(frameHello, 0, mustJSON(hello{Version: ProtocolVersion, Role: "server", PID: os.Getpid(), Source: strings.TrimPrefix(sourceRecorded, sourceMarker), SandboxEnforced: enforced, SandboxNotes: notes})); err != nil {
		return fmt.Errorf("helper: send hello: %w", err)
	}
	// The restricted threads commands start from are made while the client gets ready.
	s.opts.Sandbox.Warm()
	// Frames are read and dispatched by one reader at a time, in order (handle never blocks
	// on a command): a goroutine, or a restricted thread of the sandbox (reader.go).
	s.in, s.src = s.stream(r)
	s.ended = make(chan error, 1)
	go s.readHello()
	defer s.stopAll()
	select {
	case <-ctx.Done():
		return nil
	case err := <-s.ended:
		return err
	}
}

func checkHello(f frame, role string) error {
	if f.typ != frameHello {
		return fmt.Errorf("%w: expected hello, got %q", ErrMalformedFrame, f.typ)
	}
	var h hello
	if err := json.Unmarshal(f.payload, &h); err != nil {
		return fmt.Errorf("%w: hello: %w", ErrMalformedFrame, err)
	}
	if h.Version != ProtocolVersion || h.Role != role {
		return fmt.Errorf("helper: peer speaks protocol %d as %q, want %d as %q", h.Version, h.Role, ProtocolVersion, role)
	}
	return nil
}

type server struct {
	opts ServeOptions

	wmu sync.Mutex
	w   io.Writer

	mu       sync.Mutex
	procs    map[uint32]*proc
	files    map[uint32]*fileIn // file operations waiting for their data
	stopping bool               // stopAll began: no request starts any more
	// owners tracks which request each running command's process group is for (owner.go).
	owners *sockowner.Table
	// tunnels carries commands' connections back over the stream (tunnel.go).
	tunnels *tunnelSet
	wg      sync.WaitGroup

	// env is the environment of the last start that carried one, kept for the starts that
	// ask for the same (envKept); only the reader of the moment uses them.
	env     []string
	envKept bool
	// scratch is scratchEnv's memo, shared by the goroutines that start commands.
	scratch atomic.Pointer[scratchMemo]

	// in is the stream of requests, read by one reader at a time (reader.go), which ends
	// the serving by sending on ended; src is its source when restricted threads may read.
	in    *bufio.Reader
	src   *source
	ended chan error
}

// track counts one more request goroutine for stopAll to wait for; false once the server is
// stopping, when the request is dropped (its client is gone).
func (s *server) track() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return false
	}
	s.wg.Add(1)
	return true
}

func (s *server) send(t frameType, id uint32, payload []byte) error {
	return s.sendFrames(frame{typ: t, id: id, payload: payload})
}

// sendFrames writes fs together, with one write.
func (s *server) sendFrames(fs ...frame) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return writeFrames(s.w, fs...)
}

// handle dispatches one frame. It never blocks on a command, so one slow command cannot stall
// the stream; only a broken protocol returns an error. onReader: it runs on a goroutine
// reading the stream, not on a restricted thread (see startFile).
func (s *server) handle(f frame, onReader bool) error {
	s.mu.Lock()
	p := s.procs[f.id]
	s.mu.Unlock()
	switch f.typ {
	case frameStart:
		p, m, err := s.accept(f)
		if p != nil {
			s.start(p, m)
		}
		return err
	case frameStdin:
		if p != nil {
			p.in.push(f.payload)
		}
	case frameStdinClose:
		if p != nil {
			p.in.close()
		}
	case frameCancel:
		if p != nil {
			p.cancel()
		}
	case frameFile, frameFileData:
		return s.handleFile(f, onReader)
	case frameOwner:
		s.handleOwner(f)
	case frameTunnelData, frameTunnelCredit, frameTunnelEOF, frameTunnelReset:
		return s.tunnels.handle(f)
	default:
		return fmt.Errorf("%w: unexpected %q from client", ErrMalformedFrame, f.typ)
	}
	return nil
}

// accept takes a start frame's request: it returns the request to start, or nil when it was
// refused (the refusal is sent) or dropped (the server is stopping); only a broken protocol
// is an error. The use mark (TouchFile) is set on a goroutine of its own: the reader may be a
// restricted thread, which may not write there.
func (s *server) accept(f frame) (*proc, startMsg, error) {
	s.mu.Lock()
	running := s.procs[f.id]
	s.mu.Unlock()
	if running != nil || f.id == 0 {
		return nil, startMsg{}, fmt.Errorf("%w: request id %d reused", ErrMalformedFrame, f.id)
	}
	m, err := s.decodeStart(f.payload)
	if err != nil {
		// The stream is intact: refuse this request only.
		return nil, m, s.send(frameExit, f.id, exitMsg{ExitCode: -1, Error: err.Error(), ErrorKind: kindInvalid}.encode())
	}
	p := newProc(f.id, m.Stdin)
	if !s.track() {
		return nil, m, nil
	}
	s.mu.Lock()
	s.procs[f.id] = p
	s.mu.Unlock()
	if s.opts.TouchFile != "" {
		go touch(s.opts.TouchFile)
	}
	return p, m, nil
}

// decodeStart decodes a start frame's message, giving one that asks for the same
// environment as the previous start the environment kept from it. Frames are handled in the
// order the client wrote them, on one goroutine, so the kept one is the one the client
// compared with. A start that cannot be decoded forgets it: a later SameEnv is refused rather
// than run with an older environment.
func (s *server) decodeStart(payload []byte) (startMsg, error) {
	m, err := decodeStartMsg(payload)
	if err != nil {
		s.envKept = false
		return m, fmt.Errorf("decode start: %w", err)
	}
	switch {
	case m.SameEnv && (len(m.Env) > 0 || !s.envKept):
		s.envKept = false
		return m, errors.New("decode start: same_env without an environment before it, or with one of its own")
	case m.SameEnv:
		m.Env = s.env
	default:
		// Shared by the commands that reuse it: clipped, so that an append copies.
		s.env, s.envKept = slices.Clip(m.Env), true
	}
	return m, nil
}

// stopAll cancels every running command and waits for them to be reaped.
func (s *server) stopAll() {
	s.mu.Lock()
	s.stopping = true
	for _, p := range s.procs {
		p.cancel()
		p.in.close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.tunnels.closeAll()
}

// start runs a request without waiting for it: on a restricted thread of the sandbox's that
// is waiting for a job, where one is and the request needs nothing the restricted thread
// cannot do (see onWorker), else on a goroutine of its own.
func (s *server) start(p *proc, m startMsg) {
	if s.onWorker(m) {
		// A worker that could not restrict its thread hands the request back: it then takes
		// the ordinary road, which reports that.
		run := func(restricted error) { s.run(p, m, restricted == nil) }
		if ok, _ := s.opts.Sandbox.Go(run); ok {
			return
		}
	}
	go s.run(p, m, false)
}

// onWorker reports whether the request can be run whole on a restricted thread of the
// sandbox, the thread its command is started from: prepared there (the directory's
// symlinks resolved, the program looked up: stat and readlink, which Landlock does not
// govern), started, waited for, and answered. A command then costs one hand-over to another
// thread rather than three (to a goroutine, to the restricted thread, back), and the thread
// its exit wakes is the one that answers. An egress relay listens and dials, which the
// restricted thread must not be able to, so a request with one takes the ordinary road; a
// helper that starts commands as another user (Spawner) has no sandbox.
func (s *server) onWorker(m startMsg) bool {
	return s.opts.Sandbox.Enforced() && s.opts.Spawner == nil && m.EgressSocket == "" && !m.EgressTunnel
}

// run runs a request and answers it; onWorker says that it runs on a restricted thread of
// the sandbox (see start).
func (s *server) run(p *proc, m startMsg, onWorker bool) {
	defer s.wg.Done()
	out := backend.NewCappedBuffer(m.MaxOutputBytes)
	errb := backend.NewCappedBuffer(m.MaxOutputBytes)
	var stdout, stderr io.Writer = out, errb
	if m.Live {
		stdout = io.MultiWriter(out, &liveWriter{s: s, id: p.id, typ: frameLiveStdout})
		stderr = io.MultiWriter(errb, &liveWriter{s: s, id: p.id, typ: frameLiveStderr})
	}
	res := s.execute(p, m, stdout, stderr, onWorker)
	// The request is forgotten before its exit is sent, so that a client reusing the ID after
	// the exit can never reach this process.
	s.mu.Lock()
	delete(s.procs, p.id)
	s.mu.Unlock()
	p.in.close()
	var stdoutB, stderrB []byte
	if res.Error == "" {
		res.StdoutBytes, res.StderrBytes = out.Total(), errb.Total()
		res.Truncated = out.Truncated() || errb.Truncated()
		stdoutB, stderrB = out.Bytes(), errb.Bytes()
	}
	_ = s.answer(p.id, stdoutB, stderrB, res.encode())
}

// answer sends a request's output in frames of up to outputChunk bytes, then its exit. The
// frames are written together as long as they fit in outputChunk, so a command with little
// output is answered with one write, which the client reads at once; more is written a chunk
// at a time, so that other requests' frames are not held up behind it.
func (s *server) answer(id uint32, stdout, stderr, exit []byte) error {
	batch := make([]frame, 0, 3)
	size := 0
	add := func(f frame) error {
		if size > 0 && size+len(f.payload) > outputChunk {
			if err := s.sendFrames(batch...); err != nil {
				return err
			}
			batch, size = batch[:0], 0
		}
		batch = append(batch, f)
		size += len(f.payload)
		return nil
	}
	for _, o := range []struct {
		t    frameType
		data []byte
	}{{frameStdout, stdout}, {frameStderr, stderr}} {
		for data := o.data; len(data) > 0; {
			n := min(len(data), outputChunk)
			if err := add(frame{typ: o.t, id: id, payload: data[:n]}); err != nil {
				return err
			}
			data = data[n:]
		}
	}
	if err := add(frame{typ: frameExit, id: id, payload: exit}); err != nil {
		return err
	}
	return s.sendFrames(batch...)
}

// liveWriter sends what a command writes as live frames, as it is read from the command's
// pipe. A stream that is slow to take them slows the copy, and so the command, as a
// terminal would; nothing is queued here. A stream that failed drops the copy and never
// fails the command: the capped output and the exit still tell the result.
type liveWriter struct {
	s      *server
	id     uint32
	typ    frameType
	broken bool
}

func (w *liveWriter) Write(p []byte) (int, error) {
	if !w.broken && w.s.sendChunks(w.typ, w.id, p) != nil {
		w.broken = true
	}
	return len(p), nil
}

func (s *server) sendChunks(t frameType, id uint32, data []byte) error {
	for len(data) > 0 {
		n := min(len(data), outputChunk)
		if err := s.send(t, id, data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// execute runs one command in its own process group and returns how it ended.
func (s *server) execute(p *proc, m startMsg, stdout, stderr io.Writer, onWorker bool) exitMsg {
	fail := func(kind, format string, args ...any) exitMsg {
		return exitMsg{ExitCode: -1, ErrorKind: kind, Error: fmt.Sprintf(format, args...)}
	}
	argv := m.Argv
	switch {
	case m.Command != "" && len(argv) == 0:
		argv = []string{s.opts.Shell, "-c", m.Command}
	case m.Command == "" && len(argv) > 0 && argv[0] != "":
	default:
		return fail(kindInvalid, "exactly one of command and argv is required")
	}
	if !filepath.IsAbs(m.Dir) {
		return fail(kindInvalid, "working directory %q is not absolute", m.Dir)
	}
	dir, kind, err := workingDir(m.Dir, m.Workspace)
	if err != nil {
		return fail(kind, "%v", err)
	}
	env, stopRelay, err := s.egressEnv(p.id, m)
	if err != nil {
		return fail(kindStart, "%v", err)
	}
	defer stopRelay()
	start := time.Now()
	prog, err := lookPath(argv[0], envValue(env, "PATH"), dir)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", argv[0], err)
		return exitMsg{ExitCode: 127, DurationNS: int64(time.Since(start))}
	}
	spec := procgroup.Spec{
		Path:      prog,
		Args:      argv,
		Dir:       dir,
		Env:       env,
		Stdout:    stdout,
		Stderr:    stderr,
		Timeout:   time.Duration(m.TimeoutMS) * time.Millisecond,
		KillGrace: time.Duration(m.KillGraceMS) * time.Millisecond,
	}
	var stdinW *os.File // ours until the command starts and the pump takes it
	if m.Stdin {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(kindStart, "stdin pipe: %v", err)
		}
		defer r.Close()
		spec.Stdin, stdinW = r, w
		spec.Started = func() {
			_ = r.Close() // the child holds its own copy
			go p.in.pump(w, func(n int) { s.grant(p.id, n) })
			stdinW = nil
		}
	}
	s.passReading(p, &spec)
	// Listed from before the fork: the child may connect before its PID is known.
	defer s.owners.TrackStart(&spec, strconv.FormatUint(uint64(p.id), 10))()
	// A cancel frame ends the run as a cancelled context does.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.onCancel(cancel)
	out, err := s.startCommand(ctx, spec, onWorker)
	if err != nil {
		if stdinW != nil {
			_ = stdinW.Close()
		}
		fmt.Fprintf(stderr, "%s: %v\n", argv[0], err)
		return exitMsg{ExitCode: procgroup.StartFailureCode(err), DurationNS: int64(time.Since(start))}
	}
	return exitMsg{
		ExitCode:   out.ExitCode,
		TimedOut:   out.TimedOut,
		Cancelled:  out.Cancelled,
		DurationNS: int64(out.Duration),
	}
}

// workingDir returns the directory a command runs in, or why it cannot run there and the
// error kind (kindOutside when it resolves outside the workspace). The common case, a command in the workspace's top, has
// nothing to contain: one stat checks that it is a directory, where resolving it took a stat
// of every component of its path (~10 µs a command). Elsewhere both are resolved, and the
// resolved directory is the one the command starts in.
func workingDir(dir, workspace string) (string, string, error) {
	if workspace != "" && dir == workspace {
		var st unix.Stat_t
		if err := unix.Stat(dir, &st); err != nil {
			return "", kindInvalid, fmt.Errorf("working directory: %w", &os.PathError{Op: "stat", Path: dir, Err: err})
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return "", kindInvalid, fmt.Errorf("working directory: %s is not a directory", dir)
		}
		return dir, "", nil
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", kindInvalid, fmt.Errorf("working directory: %w", err)
	}
	if workspace == "" {
		return real, "", nil
	}
	ws, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		return "", kindInvalid, fmt.Errorf("workspace: %w", err)
	}
	if !backend.Within(ws, real) {
		return "", kindOutside, fmt.Errorf("working directory %q resolves to %s, outside %s", dir, real, ws)
	}
	return real, "", nil
}

// grant returns stdin credit to the client once bytes reached the command (or were dropped
// because it stopped reading).
func (s *server) grant(id uint32, n int) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(n))
	_ = s.send(frameWindow, id, b[:])
}

// lookPath finds a program the way a shell would with the command's own PATH (not the
// helper's).
func lookPath(name, pathEnv, dir string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", err
		}
		return p, nil
	}
	if pathEnv == "" {
		pathEnv = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", errors.New("not found")
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s: permission denied", p)
	}
	return nil
}

func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// touch sets path's times to now; failures are ignored (the file is a hint for gc).
func touch(path string) {
	ts := []unix.Timespec{{Nsec: unix.UTIME_NOW}, {Nsec: unix.UTIME_NOW}}
	_ = unix.UtimesNanoAt(unix.AT_FDCWD, path, ts, 0)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("helper: marshal: " + err.Error()) // only fixed message types are marshalled
	}
	return b
}
