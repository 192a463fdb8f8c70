package procgroup

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A command's output is read by the goroutine that waits for it, in one poll(2) over both
// pipes and the leader's pidfd: no reader goroutines, no network-poller registration, and
// the leader's exit and the pipes' end are seen by the same system call. A command that
// writes keeps the loop reading, so a full pipe never blocks it; what a writer does (a
// capped buffer, a live copy) it does as the output arrives.
//
// The waiting process holds its own copies of the pipes' write ends until the leader has
// exited. A pipe tells its reader only of its last writer's close, so a command's end wakes
// the waiter once, with its exit, rather than three times (its stdout closed, its stderr
// closed, its exit: each a poll(2) round, and on a busy core the waiter taking the core
// from the exiting command twice). Closing the copies then leaves the pipes to whoever
// still holds them: at once at their end, unless a process escaped the group.

// stream is the read end of one output pipe, non-blocking, and where its bytes go.
type stream struct {
	fd int // -1 once it reached its end and was closed
	w  io.Writer
}

// outputPipes gives the stdout and stderr pipes: the write ends (blocking, as a command
// expects its output to be) for the child, the read ends (non-blocking) for the streams.
// They are the spare set made while the previous command ran (refillPipes), when there is
// one: making them took ~14 µs of a command's start in the helper, on the path between the
// request and the fork.
func outputPipes(stdout, stderr io.Writer) (w [2]*os.File, s [2]stream, err error) {
	ps := sparePipes.Swap(nil)
	if ps == nil {
		if ps, err = makePipes(); err != nil {
			return w, s, err
		}
	}
	for i, dst := range []io.Writer{stdout, stderr} {
		w[i] = ps.w[i]
		s[i] = stream{fd: ps.r[i], w: orDiscard(dst)}
	}
	return w, s, nil
}

// pipeSet is a command's two output pipes before it has them. The descriptors are
// close-on-exec, so no process started meanwhile holds them.
type pipeSet struct {
	r [2]int
	w [2]*os.File
}

// sparePipes is the one set made ahead, or nil.
var sparePipes atomic.Pointer[pipeSet]

// refillPipes makes the next command's pipes when none are spare; Start calls it once its
// command is running, off the path between a request and its fork.
func refillPipes() {
	if sparePipes.Load() != nil {
		return
	}
	ps, err := makePipes()
	if err != nil {
		return // the next command makes its own, and says why if it cannot
	}
	if !sparePipes.CompareAndSwap(nil, ps) {
		ps.close()
	}
}

func makePipes() (*pipeSet, error) {
	ps := &pipeSet{r: [2]int{-1, -1}}
	for i := range ps.r {
		var fds [2]int
		err := unix.Pipe2(fds[:], unix.O_CLOEXEC)
		if err == nil {
			// A new pipe's read end has no status flag but its access mode, which F_SETFL
			// leaves alone: one call, where SetNonblock reads the flags first.
			if _, err = unix.FcntlInt(uintptr(fds[0]), unix.F_SETFL, unix.O_NONBLOCK); err != nil {
				_ = unix.Close(fds[0])
				_ = unix.Close(fds[1])
			}
		}
		if err != nil {
			ps.close()
			return nil, err
		}
		ps.r[i], ps.w[i] = fds[0], os.NewFile(uintptr(fds[1]), "|1")
	}
	return ps, nil
}

func (ps *pipeSet) close() {
	for i := range ps.r {
		if ps.r[i] >= 0 {
			_ = unix.Close(ps.r[i])
		}
		if ps.w[i] != nil {
			_ = ps.w[i].Close()
		}
	}
}

// waitLeader reads the output until the leader pid has exited, leaving it a zombie for
// cmd.Wait to reap.
func (p *Process) waitLeader(pid int) {
	fd, done, err := exitFD(pid)
	if err != nil {
		// No descriptor to spare: the exit is waited for aside and looked at between polls.
		exited := make(chan struct{})
		go func() { waitExit(pid); close(exited) }()
		for {
			select {
			case <-exited:
				return
			default:
			}
			timeout := p.reapWait()
			if timeout < 0 || timeout > 10 {
				timeout = 10
			}
			if !p.poll(-1, timeout) {
				<-exited
				return
			}
		}
	}
	defer done()
	for {
		ok := p.poll(fd, p.reapWait())
		if !ok {
			waitExit(pid) // not expected; the pipes are read after the exit
			return
		}
		if p.exitReady {
			return
		}
	}
}

// poll waits (up to timeout ms, -1 without limit) until a stream, the aside descriptor, or
// exited when it is not -1, is ready, reads the ready streams and tells a ready aside. It
// records in p.exitReady whether exited was ready, and is false only when poll(2) itself
// fails.
func (p *Process) poll(exited, timeout int) bool {
	var fds [4]unix.PollFd
	n := 0
	for _, s := range p.streams {
		if s.fd >= 0 {
			fds[n] = unix.PollFd{Fd: int32(s.fd), Events: unix.POLLIN}
			n++
		}
	}
	streams := n
	if exited >= 0 {
		fds[n] = unix.PollFd{Fd: int32(exited), Events: unix.POLLIN}
		n++
	}
	aside := -1
	if p.aside != nil {
		aside = n
		fds[n] = unix.PollFd{Fd: int32(p.aside.FD), Events: unix.POLLIN}
		n++
	}
	p.exitReady = false
	ready, err := unix.Poll(fds[:n], timeout)
	if err != nil {
		return errors.Is(err, unix.EINTR)
	}
	if exited >= 0 && ready > 0 {
		p.leaderWakes++
	}
	p.readReady(fds[:streams], p.buffer())
	p.exitReady = exited >= 0 && fds[streams].Revents != 0
	if aside >= 0 && fds[aside].Revents != 0 {
		a := p.aside
		p.aside = nil
		a.Ready()
	}
	return true
}

// drainUntil reads what is left in the pipes until both have ended or the deadline has
// passed, then closes them: only a process that escaped the group holds them longer.
func (p *Process) drainUntil(deadline time.Time) {
	for p.open() {
		left := time.Until(deadline)
		if left <= 0 || !p.poll(-1, int(max(1, left.Milliseconds()))) {
			break
		}
	}
	p.closeStreams()
}

// open reports whether a stream has not yet ended.
func (p *Process) open() bool {
	for _, s := range p.streams {
		if s.fd >= 0 {
			return true
		}
	}
	return false
}

// readReady reads every stream that poll found ready until it would block or ends.
func (p *Process) readReady(fds []unix.PollFd, buf []byte) {
	for _, f := range fds {
		if f.Revents == 0 {
			continue
		}
		for i := range p.streams {
			if s := &p.streams[i]; s.fd == int(f.Fd) {
				s.readAvailable(buf)
			}
		}
	}
}

func (s *stream) readAvailable(buf []byte) {
	for s.fd >= 0 {
		n, err := unix.Read(s.fd, buf)
		switch {
		case n > 0:
			_, _ = s.w.Write(buf[:n])
		case errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.EAGAIN):
			return
		default: // the end (n == 0), or a pipe that cannot be read
			_ = unix.Close(s.fd)
			s.fd = -1
		}
	}
}

// closeWriteEnds closes this process's copies of the pipes' write ends, once.
func (p *Process) closeWriteEnds() {
	for i, f := range p.writeEnds {
		if f != nil {
			_ = f.Close()
			p.writeEnds[i] = nil
		}
	}
}

func (p *Process) closeStreams() {
	p.closeWriteEnds()
	for i := range p.streams {
		if s := &p.streams[i]; s.fd >= 0 {
			_ = unix.Close(s.fd)
			s.fd = -1
		}
	}
	if p.buf != nil {
		readBuffers.Put((*[readBufferSize]byte)(p.buf))
		p.buf = nil
	}
}

// buffer is the read buffer, taken on first use and given back by closeStreams.
func (p *Process) buffer() []byte {
	if p.buf == nil {
		p.buf = readBuffers.Get().(*[readBufferSize]byte)[:]
	}
	return p.buf
}

// readBuffers keeps read buffers between commands: 32 KiB each would otherwise be garbage
// after every command.
var readBuffers = sync.Pool{New: func() any { return new([readBufferSize]byte) }}

const readBufferSize = 32 << 10

// exitFD returns a descriptor that becomes readable when the leader pid has exited: its
// pidfd, or where the kernel has none (before Linux 5.3) a pipe whose write end a goroutine
// closes once waitid saw the exit. The leader is not reaped until Wait says so, so the PID is
// still its own. done releases the descriptor.
func exitFD(pid int) (fd int, done func(), err error) {
	if fd, err := unix.PidfdOpen(pid, 0); err == nil {
		return fd, func() { _ = unix.Close(fd) }, nil
	}
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return -1, nil, err
	}
	exited := make(chan struct{})
	go func() {
		waitExit(pid)
		_ = unix.Close(fds[1])
		close(exited)
	}()
	return fds[0], func() { <-exited; _ = unix.Close(fds[0]) }, nil
}
