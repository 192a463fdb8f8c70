package helper

import (
	"io"
	"sync"
)

// proc is the server's state for one running request.
type proc struct {
	id uint32
	in *stdinQueue
	// handOn, when set, passes the reading of requests on to another thread: the thread
	// that read the request reads no more while its command runs once something comes on
	// the stream, or once the command started where the stream cannot be watched
	// (passReading in reader.go). It acts once.
	handOn func()

	// mu guards whether a cancel frame (or the server's stop) came, and what it calls.
	mu        sync.Mutex
	cancelled bool
	onCancelF func()
}

func newProc(id uint32, _ bool) *proc {
	return &proc{id: id, in: newStdinQueue()}
}

// cancel ends the run as a cancelled context does, now or as soon as it has one.
func (p *proc) cancel() {
	p.mu.Lock()
	p.cancelled = true
	f := p.onCancelF
	p.mu.Unlock()
	if f != nil {
		f()
	}
}

// onCancel sets what cancel calls; it is called at once when cancel came first.
func (p *proc) onCancel(f func()) {
	p.mu.Lock()
	p.onCancelF = f
	c := p.cancelled
	p.mu.Unlock()
	if c {
		f()
	}
}

// stdinQueue buffers stdin chunks between the stream reader, which must never block, and the
// command's stdin pipe. The client's credit bounds it to stdinWindow; chunks beyond that are
// a protocol violation and are dropped.
type stdinQueue struct {
	mu     sync.Mutex
	chunks [][]byte
	size   int
	closed bool
	wake   chan struct{}
}

func newStdinQueue() *stdinQueue { return &stdinQueue{wake: make(chan struct{}, 1)} }

func (q *stdinQueue) push(b []byte) {
	if len(b) == 0 {
		return
	}
	q.mu.Lock()
	if !q.closed && q.size+len(b) <= stdinWindow {
		q.chunks = append(q.chunks, b)
		q.size += len(b)
	}
	q.mu.Unlock()
	q.signal()
}

func (q *stdinQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *stdinQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pump writes queued chunks to w until the queue is closed and empty, then closes w. Each
// chunk written, or dropped because the command stopped reading, is granted back.
func (q *stdinQueue) pump(w io.WriteCloser, grant func(int)) {
	defer w.Close()
	broken := false
	for {
		q.mu.Lock()
		var b []byte
		if len(q.chunks) > 0 {
			b = q.chunks[0]
			q.chunks[0] = nil
			q.chunks = q.chunks[1:]
			q.size -= len(b)
		}
		closed := q.closed
		q.mu.Unlock()
		if b == nil {
			if closed {
				return
			}
			<-q.wake
			continue
		}
		if !broken {
			if _, err := w.Write(b); err != nil {
				broken = true
			}
		}
		grant(len(b))
	}
}
