package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// A run's shell and every job it starts share one standard error, and each diagnostic
// takes a shell several writes: dash writes "dash: 1: ", then "NAME: not found", then the
// newline, each on its own, and bash and busybox do alike through unbuffered stdio. Read
// from a pipe, the writes of jobs running at once interleave: one job's prefix, another's
// "Cannot fork", then the first job's "0: not found" reads as a lookup of "Cannot fork0".
// The bytes alone cannot tell those apart, so no parser can undo it.
//
// So standard error is one end of a SOCK_SEQPACKET socket pair instead of a pipe: the
// socket keeps every write a record of its own, and with SO_PASSCRED the kernel stamps
// each record with the process that wrote it. Put back together per writer, each
// process's stream is exactly what it wrote, in order, and each diagnostic is whole.
//
// The one thing a socket changes for the shell is that open("/dev/stderr") (a link into
// /proc/self/fd) fails with ENXIO; no command of the corpus opens it.

// stderrRecord is one write to the run's standard error.
type stderrRecord struct {
	pid  int32
	data []byte
}

// stderrLog collects a run's standard error, one record per write.
type stderrLog struct {
	f    *os.File // the driver's end
	done chan stderrRead
}

type stderrRead struct {
	recs []stderrRecord
	err  error
}

// newStderr returns the end to give the shell as its standard error and the log that
// reads the other. The caller closes w once the shell has started.
func newStderr() (w *os.File, l *stderrLog, err error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("stderr socket pair: %w", err)
	}
	if err := syscall.SetsockoptInt(fds[0], syscall.SOL_SOCKET, syscall.SO_PASSCRED, 1); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("SO_PASSCRED: %w", err)
	}
	// Non-blocking, so that os.NewFile puts it in the poller and read deadlines work.
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, nil, err
	}
	l = &stderrLog{f: os.NewFile(uintptr(fds[0]), "stderr-log"), done: make(chan stderrRead, 1)}
	go func() { l.done <- l.read() }()
	return os.NewFile(uintptr(fds[1]), "stderr"), l, nil
}

// read receives records until every writer has closed its end (or the deadline set by
// wait passes). It never stops draining the socket, so that no writer blocks on it; past
// maxStderr bytes it drops what it reads.
func (l *stderrLog) read() stderrRead {
	rc, err := l.f.SyscallConn()
	if err != nil {
		return stderrRead{err: err}
	}
	var out stderrRead
	kept := 0
	buf := make([]byte, maxStderr+1) // a longer record is cut: only maxStderr bytes are kept
	oob := make([]byte, syscall.CmsgSpace(syscall.SizeofUcred))
	for {
		var n, oobn int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), buf, oob, 0)
			return rerr != syscall.EAGAIN
		})
		if err == nil {
			err = rerr
		}
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			out.err = err
			return out
		}
		pid, ok := senderPID(oob[:oobn])
		if !ok {
			// Every record carries credentials (SO_PASSCRED), a zero-length write too:
			// a record without them is the end of the stream.
			return out
		}
		if n = min(n, maxStderr-kept); n > 0 {
			out.recs = append(out.recs, stderrRecord{pid: pid, data: append([]byte(nil), buf[:n]...)})
			kept += n
		}
	}
}

// senderPID reads the writer's pid from a record's SCM_CREDENTIALS.
func senderPID(oob []byte) (int32, bool) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for i := range msgs {
		if cred, err := syscall.ParseUnixCredentials(&msgs[i]); err == nil {
			return cred.Pid, true
		}
	}
	return 0, false
}

// wait returns what the run's processes wrote, each process's writes together and in
// order, processes in the order of their first write, at most maxStderr bytes. It waits
// until every writer has closed the socket, or until the deadline: the caller has killed
// what was left of the run by then (killUser), so the socket ends as soon as its last
// holder has exited.
func (l *stderrLog) wait(deadline time.Time) ([]byte, error) {
	_ = l.f.SetReadDeadline(deadline)
	r := <-l.done
	_ = l.f.Close()
	if errors.Is(r.err, os.ErrDeadlineExceeded) {
		r.err = errors.New("standard error still held open after the run")
	}
	return byWriter(r.recs), r.err
}

// byWriter puts records back together per writer (see the top of this file).
func byWriter(recs []stderrRecord) []byte {
	var order []int32
	streams := map[int32]*bytes.Buffer{}
	for _, r := range recs {
		s := streams[r.pid]
		if s == nil {
			s = new(bytes.Buffer)
			streams[r.pid] = s
			order = append(order, r.pid)
		}
		s.Write(r.data)
	}
	var out bytes.Buffer
	for _, pid := range order {
		s := streams[pid].Bytes()
		// A process's stream ends in a newline unless it was cut or left a line open; keep
		// the next process's first line from joining that last one.
		if out.Len() > 0 && out.Bytes()[out.Len()-1] != '\n' {
			out.WriteByte('\n')
		}
		out.Write(s)
	}
	return out.Bytes()
}
