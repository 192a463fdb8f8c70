package helper

import (
	"fmt"
	"io"
	"sync"
)

// liveQueueBytes bounds the live output a call holds for a slow writer. The stream's read
// loop must never wait for one call's writer (every other request shares the stream), so
// what does not fit is dropped and said.
const liveQueueBytes = 4 << 20

// liveChunk is one live frame's bytes, for stdout or stderr.
type liveChunk struct {
	stderr bool
	data   []byte
}

// liveCopy delivers a call's live frames to the request's writers, in the order they came,
// from a goroutine of its own.
type liveCopy struct {
	stdout, stderr io.Writer

	mu      sync.Mutex
	queue   []liveChunk
	queued  int
	dropped [2]int64 // stdout, stderr bytes dropped since the last delivery
	closed  bool
	wake    chan struct{}
	done    chan struct{}
}

func newLiveCopy(stdout, stderr io.Writer) *liveCopy {
	l := &liveCopy{stdout: stdout, stderr: stderr, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go l.deliver()
	return l
}

// push queues p; it never blocks. The payload is the frame's own (readFrame allocates it).
func (l *liveCopy) push(stderr bool, p []byte) {
	l.mu.Lock()
	switch {
	case l.closed:
	case l.queued+len(p) > liveQueueBytes:
		l.dropped[b2i(stderr)] += int64(len(p))
	default:
		l.queue = append(l.queue, liveChunk{stderr: stderr, data: p})
		l.queued += len(p)
	}
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// finish stops taking frames and waits until everything queued was written.
func (l *liveCopy) finish() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	<-l.done
}

func (l *liveCopy) deliver() {
	defer close(l.done)
	for {
		l.mu.Lock()
		q, dropped, closed := l.queue, l.dropped, l.closed
		l.queue, l.queued, l.dropped = nil, 0, [2]int64{}
		l.mu.Unlock()
		for _, c := range q {
			l.write(c.stderr, c.data)
		}
		for i, n := range dropped {
			if n > 0 {
				l.write(i == 1, fmt.Appendf(nil, "\n[... airlock: %d bytes of live output dropped: the reader fell behind ...]\n", n))
			}
		}
		if closed && len(q) == 0 {
			return
		}
		if len(q) == 0 {
			<-l.wake
		}
	}
}

// write copies to the stream's writer; a failing writer never fails the command.
func (l *liveCopy) write(stderr bool, p []byte) {
	w := l.stdout
	if stderr {
		w = l.stderr
	}
	if w != nil {
		_, _ = w.Write(p)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
