package backend

import (
	"fmt"
	"sync"
)

// DefaultMaxOutputBytes is the per-stream cap used when neither the request nor the
// environment sets one.
const DefaultMaxOutputBytes = 1 << 20

// CappedBuffer is an io.Writer that keeps at most a fixed number of bytes of what is written
// to it: the first half and the last half. Memory stays bounded however much is written, so a
// command that prints gigabytes costs the cap and nothing more. It is safe for concurrent use.
type CappedBuffer struct {
	mu    sync.Mutex
	max   int64
	head  []byte
	tail  []byte // ring buffer of the last tailCap bytes
	tpos  int    // next write position in tail once it is full
	total int64
}

// NewCappedBuffer returns a buffer that keeps at most max bytes (DefaultMaxOutputBytes when
// max <= 0).
func NewCappedBuffer(max int64) *CappedBuffer {
	if max <= 0 {
		max = DefaultMaxOutputBytes
	}
	return &CappedBuffer{max: max}
}

func (b *CappedBuffer) headCap() int64 { return b.max - b.max/2 }
func (b *CappedBuffer) tailCap() int64 { return b.max / 2 }

// Write keeps what fits and never fails, so that a command is never blocked or killed for
// printing too much.
func (b *CappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	b.total += int64(n)
	if room := b.headCap() - int64(len(b.head)); room > 0 {
		take := min(int64(len(p)), room)
		b.head = append(b.head, p[:take]...)
		p = p[take:]
	}
	tc := int(b.tailCap())
	if len(p) == 0 || tc == 0 {
		return n, nil
	}
	if len(p) >= tc {
		// Only the last tc bytes can survive; restart the ring with them.
		b.tail = append(b.tail[:0], p[len(p)-tc:]...)
		b.tpos = 0
		return n, nil
	}
	if len(b.tail) < tc {
		room := tc - len(b.tail)
		take := min(room, len(p))
		b.tail = append(b.tail, p[:take]...)
		p = p[take:]
	}
	for len(p) > 0 {
		c := copy(b.tail[b.tpos:], p)
		p = p[c:]
		b.tpos = (b.tpos + c) % tc
	}
	return n, nil
}

// Total is the number of bytes written, kept or not.
func (b *CappedBuffer) Total() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// Truncated reports whether anything was dropped.
func (b *CappedBuffer) Truncated() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total > b.max
}

// Bytes returns what was kept. When something was dropped, head and tail are joined by a
// marker line saying how many bytes are missing.
func (b *CappedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := b.orderedTail()
	if b.total <= b.max {
		out := make([]byte, 0, len(b.head)+len(tail))
		return append(append(out, b.head...), tail...)
	}
	marker := TruncationMarker(b.total - int64(len(b.head)) - int64(len(tail)))
	out := make([]byte, 0, len(b.head)+len(marker)+len(tail))
	out = append(out, b.head...)
	out = append(out, marker...)
	return append(out, tail...)
}

func (b *CappedBuffer) orderedTail() []byte {
	if len(b.tail) < int(b.tailCap()) || b.tpos == 0 {
		return b.tail
	}
	out := make([]byte, 0, len(b.tail))
	out = append(out, b.tail[b.tpos:]...)
	return append(out, b.tail[:b.tpos]...)
}

// Captured returns the part of a Result that two capped streams give: what was kept of
// each, whether either was cut, and how much each command wrote in all.
func Captured(stdout, stderr *CappedBuffer) Result {
	return Result{
		Stdout:      stdout.Bytes(),
		Stderr:      stderr.Bytes(),
		Truncated:   stdout.Truncated() || stderr.Truncated(),
		StdoutBytes: stdout.Total(),
		StderrBytes: stderr.Total(),
	}
}

// TruncationMarker is the line put where output was cut. It is stable so that models and tests
// can recognise it.
func TruncationMarker(dropped int64) string {
	return fmt.Sprintf("\n[... airlock: %d bytes truncated ...]\n", dropped)
}
