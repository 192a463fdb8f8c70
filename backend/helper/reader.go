package helper

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/backend/procgroup"
	"github.com/airlock-dev/airlock/backend/sandbox"
)

// Reading requests. One reader at a time reads the stream and handles what it reads, in
// order. Where commands start from the sandbox's restricted threads (onWorker), the reading
// follows the work:
//
//   - After a command's start, one of those threads reads, waiting in read(2) on the stream
//     itself. A start frame it reads that can run on a restricted thread (nearly all of them)
//     it runs itself: the thread the request's bytes wake is the thread that starts the
//     command, waits for it and answers. A reader goroutine that handed the request to a
//     restricted thread instead cost a wake-up of that thread and the passing of the
//     runtime's processor to it: 47-84 µs for a pipe round trip here, against 7-12 µs for
//     a read on the locked thread itself.
//   - While its command runs, that thread watches the stream in the same poll(2) as the
//     command (procgroup.Aside). Only when something comes does it lend the reading to
//     another restricted thread (one waiting for a job, or a new one); else it answers and
//     reads the next request itself. Commands one after another then cost no hand-over at
//     all: lending the reading after every start cost each command a wake-up of the next
//     reader and of a runtime thread beside it, about 14 of 50 context switches a command
//     and its raw fork/exec made together in `airlock bench`.
//   - Any other frame (a file operation, stdin, a cancel) a restricted reader handles, then
//     gives the reading to a goroutine and ends: the work such a frame starts runs on
//     goroutines, which a thread waiting in a system call would keep from its processor until
//     the runtime's monitor took it back (up to 10 ms). That goroutine reads through the
//     runtime's network poller, as every reader did before, until it hands a start to a
//     restricted thread; then it lends the reading to another one and ends.
//   - A goroutine reader (never a restricted one) opens the file of a read or a window
//     itself, and answers it there when the file is small (startFile in files.go): a
//     goroutine made for it cost more than the read.
//
// Elsewhere (no sandbox, commands as another user, a stream that is not a pipe or socket)
// a goroutine reads, through the poller where it can.

// source is the stream of requests when restricted threads may read it: the same pipe or
// socket read directly by a restricted reader, in a blocking read(2), or through the poller
// (polled) by a goroutine. Only the reader of the moment reads it, and sets the mode
// (setDirect).
type source struct {
	f      *os.File // keeps fd from being closed by its finalizer
	fd     int
	polled *os.File // the poller's duplicate of fd; nil while a restricted thread reads
	direct bool
	// yielded is when a direct reader last gave up its processor (yieldNow).
	yielded time.Time
}

// setDirect sets how the reader of the moment reads. The descriptor and the poller's
// duplicate share one open file, so the mode is the file's: blocking for a direct read,
// non-blocking for the poller. It changes only when the reader's kind does.
//
// A direct reader closes the duplicate, which takes it out of the poller: left there, every
// request the client wrote also woke the runtime's thread waiting in epoll_wait(2), which
// found nothing to do (two context switches a command in `airlock bench`). A goroutine
// reader makes a new one. Where that cannot be made, the reading stays direct: a goroutine
// then waits in read(2), holding its thread, which is slower but reads the same.
func (r *source) setDirect(direct bool) {
	if r.direct == direct {
		return
	}
	if !direct {
		p := pollableDup(r.fd, r.f.Name())
		if p == nil {
			return
		}
		r.polled, r.direct = p, false
		return
	}
	if unix.SetNonblock(r.fd, false) != nil {
		return
	}
	if r.polled != nil {
		_ = r.polled.Close()
		r.polled = nil
	}
	r.direct = true
}

// Read reads what is there, or waits for it.
func (r *source) Read(p []byte) (int, error) {
	if !r.direct {
		return r.polled.Read(p)
	}
	r.yieldNow()
	return readFD(r.fd, p, r.f.Name(), func() error {
		// Still non-blocking (setDirect failed): wait here all the same.
		fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
			return &os.PathError{Op: "poll", Path: r.f.Name(), Err: err}
		}
		return nil
	})
}

// yieldNow lets the runtime schedule once when the reader has not for yieldEvery. A direct
// reader on its locked thread goes from read(2) to a command's poll(2) to write(2) and back
// without ever giving up its processor, so the processor's scheduling tick stays put; after
// 10 ms of that the runtime's monitor takes it for a goroutine that never yields: it sends
// the thread a preemption signal, takes the processor from it, and, having taken one, goes
// back to looking every 20 µs. Back to back, that was a preemption every 10 ms and 1.7
// wake-ups of the monitor a command (`airlock bench`, one core); yielding first costs a
// hand-over of the processor every few milliseconds instead.
func (r *source) yieldNow() {
	if now := time.Now(); now.Sub(r.yielded) >= yieldEvery {
		runtime.Gosched()
		r.yielded = now
	}
}

// yieldEvery is how long a direct reader keeps its processor before yieldNow gives it up:
// under the monitor's 10 ms, so that it never sees the same tick twice that far apart.
const yieldEvery = 4 * time.Millisecond

// readFD reads from fd into p with read(2) on the calling thread, again after EINTR, and
// gives io.EOF at the end. On EAGAIN it calls again, when not nil, and reads again after it
// (a nil again makes EAGAIN an error).
func readFD(fd int, p []byte, name string, again func() error) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := unix.Read(fd, p)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN && again != nil:
			if err := again(); err != nil {
				return 0, err
			}
			continue
		case err != nil:
			return 0, &os.PathError{Op: "read", Path: name, Err: err}
		case n == 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// stream sets up how requests are read from r: a buffered reader, and, when restricted
// threads may read it, its source.
func (s *server) stream(r io.Reader) (*bufio.Reader, *source) {
	const size = 64 << 10
	f, ok := r.(*os.File)
	if !ok || !pipeOrSocket(f) {
		return bufio.NewReaderSize(r, size), nil
	}
	fd := int(f.Fd())
	polled := pollableDup(fd, f.Name())
	if polled == nil {
		return bufio.NewReaderSize(f, size), nil
	}
	if !s.opts.Sandbox.Enforced() || s.opts.Spawner != nil {
		return bufio.NewReaderSize(polled, size), nil
	}
	src := &source{f: f, fd: fd, polled: polled}
	return bufio.NewReaderSize(src, size), src
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
	s.readFrames()
}

// lendReading gives the reading to a restricted thread, or reports false when none can take
// it (the sandbox is closed). It does not wait. From restricted thread w it lends to one of
// w's generation without looking at the stamps (the next reader asks Current before it
// starts anything).
func (s *server) lendReading(w *sandbox.Worker) bool {
	lend := s.opts.Sandbox.Lend
	if w != nil {
		lend = w.Lend
	}
	if err := lend(s.readOnWorker); err != nil {
		s.opts.Logger.Debug("requests read on a goroutine", "why", err)
		return false
	}
	return true
}

// readFrames reads and handles frames on this goroutine until the stream ends or a frame
// breaks the protocol, or until it handed a start to a restricted thread, when it lends the
// reading to another one.
func (s *server) readFrames() {
	if s.src != nil {
		s.src.setDirect(false)
	}
	for {
		f, err := s.next()
		if err == nil {
			err = s.handle(f, true)
		}
		if err != nil {
			s.end(err)
			return
		}
		if f.typ == frameStart && s.src != nil && s.lendReading(nil) {
			return
		}
	}
}

// readOnWorker is the reader on a restricted thread w (see the top of this file). Without w
// (the thread could not be restricted) it is readFrames: requests then take the ordinary
// road, which says why.
func (s *server) readOnWorker(w *sandbox.Worker, _ error) {
	if w == nil {
		s.readFrames()
		return
	}
	s.src.setDirect(true)
	for {
		f, err := s.next()
		if err != nil {
			s.end(err)
			return
		}
		if f.typ != frameStart {
			s.handOff(s.handle(f, false))
			return
		}
		p, m, err := s.accept(f)
		if err != nil || p == nil {
			s.handOff(err)
			return
		}
		if !s.onWorker(m) || !w.Current() {
			// Not for a restricted thread, or not for this one: its rules are an older
			// generation's (a stamped directory changed while it waited).
			s.start(p, m)
			s.handOff(nil)
			return
		}
		if s.runReading(w, p, m) {
			return
		}
	}
}

// runReading runs a request on w, the reader of the moment, and reports whether it lent
// the reading to another thread meanwhile; when it did not, w reads on. The reading is
// lent once the command has started, so that starting it comes first, and where the stream
// can be watched while the command runs (passReading), only when something comes on it.
// Everything here happens on w's thread.
func (s *server) runReading(w *sandbox.Worker, p *proc, m startMsg) (lent bool) {
	p.handOn = func() {
		if lent {
			return
		}
		lent = true
		if !s.lendReading(w) {
			go s.readFrames()
		}
	}
	s.run(p, m, true)
	return lent
}

// passReading makes the command of p, read by a restricted reader, pass the reading on
// (p.handOn): when the stream has nothing buffered, the wait for the command watches it and
// passes the reading on only when something comes (a frame for another request, stdin, a
// cancel); else as soon as the command has started. Commands run one after another then
// cost no hand-over between threads: the thread a request wakes starts its command, waits
// for it, answers and reads the next.
func (s *server) passReading(p *proc, spec *procgroup.Spec) {
	if p.handOn == nil {
		return
	}
	if s.src != nil && s.src.direct && s.in.Buffered() == 0 {
		spec.Aside = &procgroup.Aside{FD: s.src.fd, Ready: p.handOn}
		return
	}
	started := spec.Started
	spec.Started = func() {
		if started != nil {
			started()
		}
		p.handOn()
	}
}

// handOff ends a restricted reader that handled a frame other than a start it runs: the
// serving ends when err is not nil, else a goroutine reads on.
func (s *server) handOff(err error) {
	if err != nil {
		s.end(err)
		return
	}
	go s.readFrames()
}

// next reads one frame; a clean end of the stream is io.EOF.
func (s *server) next() (frame, error) {
	f, err := readFrame(s.in)
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("helper: read: %w", err)
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

// pollableDup returns a reader of the same pipe or socket as fd that waits in the runtime's
// network poller rather than in a blocking read(2): a goroutine blocked in a system call
// keeps its thread and scheduler slot until the runtime's monitor takes the slot back (tens of
// microseconds or more), and the request just read waits for it. It is a duplicate of fd,
// which the poller takes even when fd itself is in it already (a pipe this process made);
// the two share the non-blocking mode it sets. It is nil when the duplicate cannot be made.
func pollableDup(fd int, name string) *os.File {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		_ = unix.Close(dup)
		return nil
	}
	return os.NewFile(uintptr(dup), name)
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
