package agent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/backend/sandbox"
)

// Reading requests. One reader at a time reads the stream and handles what it reads, in
// order. Where commands start from the sandbox's restricted threads (onWorker), the reader
// is one of those threads, waiting in a blocking read(2): a start frame it reads that can run
// on a restricted thread (nearly all of them) it runs itself, after lending the reading to
// another restricted thread (one waiting for a job, or a new one). The thread the request's
// bytes wake is then the thread that starts the command, waits for it and answers. A reader
// goroutine that handed the request to a restricted thread instead cost a wake-up of that
// thread and the passing of the runtime's processor to it: 40–70 µs a command here, a fifth
// of Airlock's share of a command (docs/benchmarks.md, "The reader on the restricted
// thread"). Elsewhere (no sandbox, commands as another user, a stream that is not a pipe or
// socket) a goroutine reads, waiting in the runtime's network poller.

// stream returns the buffered reader of r that requests are read from, and whether
// restricted threads read it (then r, a pipe or socket, is read with blocking reads).
func (s *server) stream(r io.Reader) (*bufio.Reader, bool) {
	const size = 64 << 10
	if s.opts.Sandbox.Enforced() && s.opts.Spawner == nil {
		if b, ok := blocking(r); ok {
			return bufio.NewReaderSize(b, size), true
		}
	}
	return bufio.NewReaderSize(pollable(r), size), false
}

// readHello reads the client's hello, then reads on.
func (s *server) readHello() {
	f, err := s.next()
	if err == nil {
		err = checkHello(f, "client")
	}
	if err != nil {
		s.end(err)
		return
	}
	if s.lend {
		s.passReading()
		return
	}
	s.readFrames()
}

// passReading gives the reading to a restricted thread; where none can take it (the sandbox
// is closed, or a new generation could not be made), to a goroutine. It does not wait.
func (s *server) passReading() {
	if err := s.opts.Sandbox.Lend(s.readOnWorker); err != nil {
		s.opts.Logger.Debug("requests read on a goroutine", "why", err)
		go s.readFrames()
	}
}

// readFrames reads and handles frames on this goroutine until the stream ends or a frame
// breaks the protocol.
func (s *server) readFrames() {
	for {
		f, err := s.next()
		if err == nil {
			err = s.handle(f)
		}
		if err != nil {
			s.end(err)
			return
		}
	}
}

// readOnWorker is readFrames on a restricted thread w, which runs the first start frame it
// can run itself once it has passed the reading on. Without w (the thread could not be
// restricted) it is readFrames: the requests then take the ordinary road, which says why.
func (s *server) readOnWorker(w *sandbox.Worker, _ error) {
	if w == nil {
		s.readFrames()
		return
	}
	for {
		f, err := s.next()
		if err != nil {
			s.end(err)
			return
		}
		if f.typ != frameStart {
			if err := s.handle(f); err != nil {
				s.end(err)
				return
			}
			continue
		}
		s.mu.Lock()
		running := s.procs[f.id]
		s.mu.Unlock()
		p, m, err := s.accept(f, running)
		switch {
		case err != nil:
			s.end(err)
			return
		case p == nil:
			continue
		}
		if s.opts.TouchFile != "" {
			// Not from this thread, which may not write there.
			go touch(s.opts.TouchFile)
		}
		switch {
		case !s.onWorker(m):
			s.start(p, m)
			continue
		case !w.Current():
			// Not for this thread: its rules are an older generation's (a stamped directory
			// changed while it waited). The request and the reading go to the current one.
			s.start(p, m)
			s.passReading()
			return
		}
		// The reading is passed on once the command has started, so that starting it comes
		// first; a command that could not start passes it on when it was answered.
		var once sync.Once
		p.handOn = func() { once.Do(s.passReading) }
		s.run(p, m, true)
		p.handOn()
		return
	}
}

// next reads one frame; a clean end of the stream is io.EOF.
func (s *server) next() (frame, error) {
	f, err := readFrame(s.in)
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("agent: read: %w", err)
	}
	return f, err
}

// end ends the serving: err is why, io.EOF a clean end. Only the reader of the moment calls
// it, once.
func (s *server) end(err error) {
	if errors.Is(err, io.EOF) {
		err = nil
	}
	s.ended <- err
}

// pollable returns a reader of the same pipe or socket as r that waits in the runtime's
// network poller rather than in a blocking read(2): a goroutine blocked in a system call
// keeps its thread and scheduler slot until the runtime's monitor takes the slot back (tens of
// microseconds or more), and the request just read waits for it. It reads a duplicate of
// r's descriptor, which the poller takes even when r's own is in it already (a pipe this
// process made). Anything else is returned as it is.
func pollable(r io.Reader) io.Reader {
	f, ok := r.(*os.File)
	if !ok || !pipeOrSocket(f) {
		return r
	}
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return r
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return r
	}
	return os.NewFile(uintptr(fd), f.Name())
}

// pipeOrSocket reports whether f is a pipe or a socket. It puts f's descriptor in blocking
// mode (as Fd does).
func pipeOrSocket(f *os.File) bool {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil {
		return false
	}
	t := st.Mode & unix.S_IFMT
	return t == unix.S_IFIFO || t == unix.S_IFSOCK
}

// blocking returns a reader of r, when r is a pipe or socket, that reads it with blocking
// read(2) calls on its descriptor, which wake the very thread that waits in them.
func blocking(r io.Reader) (io.Reader, bool) {
	f, ok := r.(*os.File)
	if !ok || !pipeOrSocket(f) {
		return nil, false
	}
	fd := int(f.Fd())
	if unix.SetNonblock(fd, false) != nil {
		return nil, false
	}
	return &fdReader{f: f, fd: fd}, true
}

// fdReader reads a descriptor with blocking reads; f keeps the file (and so the descriptor)
// from being closed by its finalizer.
type fdReader struct {
	f  *os.File
	fd int
}

func (r *fdReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := unix.Read(r.fd, p)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: err}
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}
