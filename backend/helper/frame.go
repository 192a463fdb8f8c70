package helper

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ProtocolVersion is the version both sides announce in their hello. A peer with another
// version is refused: the helper binary and the host must come from the same build family.
// (2: file-op frames; 3: live output frames; 4: owner frames; 5: tunnel frames; 6: a start
// that reuses the previous start's environment; 7: start and exit messages in binary,
// msgcodec.go; 8: file requests and answers in binary too, and the resolve answer.)
const ProtocolVersion = 8

// MaxPayload bounds one frame's payload. Larger data is split into several frames.
const MaxPayload = 1 << 20

// headerLen is the type byte plus the request ID; the length prefix counts them.
const headerLen = 5

// ErrMalformedFrame marks a stream that does not follow the framing; the stream cannot be
// trusted after it and is closed.
var ErrMalformedFrame = errors.New("helper: malformed frame")

type frameType byte

const (
	frameHello      frameType = 'H' // JSON hello, both directions, request ID 0
	frameStart      frameType = 'S' // startMsg (msgcodec.go), client to server
	frameStdin      frameType = 'I' // raw stdin bytes, client to server
	frameStdinClose frameType = 'C' // end of stdin, client to server
	frameCancel     frameType = 'X' // kill the command's tree, client to server
	frameWindow     frameType = 'W' // 4-byte stdin credit, server to client
	frameStdout     frameType = 'O' // raw stdout bytes (already capped), server to client
	frameStderr     frameType = 'E' // raw stderr bytes (already capped), server to client
	frameExit       frameType = 'Q' // exitMsg (msgcodec.go), server to client; the request is over
	frameFile       frameType = 'F' // fileMsg (msgcodec.go), client to server (files.go)
	frameFileData   frameType = 'D' // raw file bytes: a write's data, or what a read returns
	frameFileDone   frameType = 'R' // fileDoneMsg (msgcodec.go), server to client; the request is over
	frameLiveStdout frameType = 'o' // raw stdout bytes as they arrive (startMsg.Live), server to client
	frameLiveStderr frameType = 'e' // raw stderr bytes as they arrive (startMsg.Live), server to client
	frameOwner      frameType = 'N' // JSON ownerMsg, client to server (owner.go)
	frameOwnerDone  frameType = 'n' // JSON ownerDoneMsg, server to client; the request is over
	// Tunnels (tunnel.go): each payload starts with the connection's 4-byte number.
	frameTunnelOpen   frameType = 'T' // a connection the command made, server to client
	frameTunnelData   frameType = 't' // its bytes, both directions
	frameTunnelCredit frameType = 'w' // 4-byte credit for more bytes, both directions
	frameTunnelEOF    frameType = 'z' // the sender sends no more, both directions
	frameTunnelReset  frameType = 'K' // the connection is over, both directions
)

func (t frameType) valid() bool {
	switch t {
	case frameHello, frameStart, frameStdin, frameStdinClose, frameCancel,
		frameWindow, frameStdout, frameStderr, frameExit, frameLiveStdout, frameLiveStderr,
		frameFile, frameFileData, frameFileDone, frameOwner, frameOwnerDone,
		frameTunnelOpen, frameTunnelData, frameTunnelCredit, frameTunnelEOF, frameTunnelReset:
		return true
	}
	return false
}

type frame struct {
	typ     frameType
	id      uint32
	payload []byte
}

// appendFrame encodes f after dst.
func appendFrame(dst []byte, f frame) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(headerLen+len(f.payload)))
	dst = append(dst, byte(f.typ))
	dst = binary.BigEndian.AppendUint32(dst, f.id)
	return append(dst, f.payload...)
}

// writeFrame writes f in a single Write so that frames from concurrent writers, serialised
// by the caller's lock, never interleave.
func writeFrame(w io.Writer, f frame) error {
	return writeFrames(w, f)
}

// writeFrames writes fs with one write, so that a request or an answer of several small
// frames costs one system call on each side rather than one per frame.
func writeFrames(w io.Writer, fs ...frame) error {
	n := 0
	for _, f := range fs {
		if len(f.payload) > MaxPayload {
			return fmt.Errorf("helper: frame payload of %d bytes exceeds %d", len(f.payload), MaxPayload)
		}
		n += 4 + headerLen + len(f.payload)
	}
	buf := make([]byte, 0, n)
	for _, f := range fs {
		buf = appendFrame(buf, f)
	}
	_, err := w.Write(buf)
	return err
}

// readFrame reads one frame. The payload is freshly allocated, so the caller may keep it.
// A clean end of stream before a frame starts is io.EOF; anything else that breaks the
// framing wraps ErrMalformedFrame or io.ErrUnexpectedEOF.
func readFrame(r io.Reader) (frame, error) {
	var hdr [4 + headerLen]byte
	if _, err := io.ReadFull(r, hdr[:4]); err != nil {
		return frame{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:4])
	if n < headerLen || n-headerLen > MaxPayload {
		return frame{}, fmt.Errorf("%w: length %d", ErrMalformedFrame, n)
	}
	if _, err := io.ReadFull(r, hdr[4:]); err != nil {
		return frame{}, unexpected(err)
	}
	f := frame{typ: frameType(hdr[4]), id: binary.BigEndian.Uint32(hdr[5:])}
	if !f.typ.valid() {
		return frame{}, fmt.Errorf("%w: unknown type %#x", ErrMalformedFrame, hdr[4])
	}
	if size := n - headerLen; size > 0 {
		f.payload = make([]byte, size)
		if _, err := io.ReadFull(r, f.payload); err != nil {
			return frame{}, unexpected(err)
		}
	}
	return f, nil
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// credit is how many bytes a sender may still send on one flow-controlled flow (a request's
// stdin, a tunnel's direction), refilled by the receiver's grants.
type credit struct {
	mu   sync.Mutex
	n    int
	wake chan struct{} // signalled by add; buffered, so add never blocks
}

func newCredit(n int) *credit { return &credit{n: n, wake: make(chan struct{}, 1)} }

// add grants n more bytes.
func (c *credit) add(n int) {
	c.mu.Lock()
	c.n += n
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// take waits for credit and takes up to want bytes of it; false once either stop channel
// is closed first.
func (c *credit) take(want int, stop1, stop2 <-chan struct{}) (int, bool) {
	for {
		c.mu.Lock()
		if c.n > 0 {
			n := min(c.n, want)
			c.n -= n
			c.mu.Unlock()
			return n, true
		}
		c.mu.Unlock()
		select {
		case <-c.wake:
		case <-stop1:
			return 0, false
		case <-stop2:
			return 0, false
		}
	}
}
