package helper

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Tunnels: a command's connections carried back over the helper's own stream. Where the
// sandbox has no way out at all — a Kubernetes pod whose NetworkPolicy denies every egress,
// whose host shares no directory and cannot be dialled from the pod — the only channel
// between the command and Airlock is the stream the helper already serves. A request that
// asks for it ([Request.EgressTunnel]) gets the same relay as a socket request (egress.go):
// a listener on 127.0.0.1 for the command, its proxy variables pointing there; but each
// connection accepted there is opened as a tunnel in the stream (frameTunnelOpen), its bytes
// carried in frames both ways, and on the host's side it is accepted from a listener that
// the backend hands to Airlock's egress proxy as the call's. The helper decides nothing: the
// proxy does, as for Docker's sockets.
//
// Each end is a local socket pair: the consumer (the relay, or the proxy's HTTP server) holds
// an ordinary connection with deadlines and half-close, and two goroutines per end move bytes
// between the other socket and the frames. Flow control is per connection and direction: a
// sender may have tunnelWindow bytes unacknowledged; the receiver grants credit as it writes
// them to its socket, so a slow reader holds back only its own connection and the stream's
// read loop never blocks. A peer that sends past its credit breaks the protocol.

// tunnelWindow is how many bytes one direction of one connection may have in flight.
const tunnelWindow = 256 << 10

// tunnelChunk is the largest data frame a tunnel sends.
const tunnelChunk = 32 << 10

// maxTunnels bounds the connections one request may have open at once; further ones are
// refused (reset), so that a helper, or a command behind it, cannot make the host hold
// unbounded buffers.
const maxTunnels = 64

// tunnelKey names one connection: the request it is for and its number within it.
type tunnelKey struct{ req, conn uint32 }

// tunnelSet is one side's tunnels. Frames from the peer are handled by handle, which never
// blocks and never writes to the stream.
type tunnelSet struct {
	send func(t frameType, id uint32, payload []byte) error

	mu     sync.Mutex
	ends   map[tunnelKey]*tunnelEnd
	next   uint32 // the last connection number opened from this side
	closed bool
}

func newTunnelSet(send func(frameType, uint32, []byte) error) *tunnelSet {
	return &tunnelSet{send: send, ends: map[tunnelKey]*tunnelEnd{}}
}

// open starts a tunnel for request req from this side and returns the consumer's end.
func (s *tunnelSet) open(req uint32) (net.Conn, error) {
	s.mu.Lock()
	s.next++
	key := tunnelKey{req, s.next}
	s.mu.Unlock()
	end, conn, err := s.add(key)
	if err != nil {
		return nil, err
	}
	if err := s.send(frameTunnelOpen, req, tunnelPayload(key.conn, nil)); err != nil {
		end.reset(false)
		conn.Close()
		return nil, fmt.Errorf("tunnel: open: %w", err)
	}
	end.start()
	return conn, nil
}

// accept takes a tunnel the peer opened; deliver hands the consumer's end on, or returns
// false when nobody takes it (the tunnel is then refused).
func (s *tunnelSet) accept(key tunnelKey, deliver func(net.Conn) bool) {
	end, conn, err := s.add(key)
	if err != nil {
		go func() { _ = s.send(frameTunnelReset, key.req, tunnelPayload(key.conn, nil)) }()
		return
	}
	if !deliver(conn) {
		conn.Close()
		end.reset(true)
		return
	}
	end.start()
}

// add registers a new end for key.
func (s *tunnelSet) add(key tunnelKey) (*tunnelEnd, net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, errors.New("tunnel: the stream is closed")
	}
	if _, dup := s.ends[key]; dup {
		return nil, nil, fmt.Errorf("tunnel: connection %d of request %d is open already", key.conn, key.req)
	}
	n := 0
	for k := range s.ends {
		if k.req == key.req {
			n++
		}
	}
	if n >= maxTunnels {
		return nil, nil, fmt.Errorf("tunnel: request %d has %d connections open, the most allowed", key.req, maxTunnels)
	}
	ours, theirs, err := socketPair()
	if err != nil {
		return nil, nil, err
	}
	end := &tunnelEnd{set: s, key: key, sock: ours, credit: newCredit(tunnelWindow),
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	s.ends[key] = end
	return end, theirs, nil
}

func (s *tunnelSet) forget(key tunnelKey, end *tunnelEnd) {
	s.mu.Lock()
	if s.ends[key] == end {
		delete(s.ends, key)
	}
	s.mu.Unlock()
}

// handle applies one tunnel frame from the peer. Only a frame that breaks the protocol is an
// error; one for a connection already gone is dropped, since the two sides close on their own.
func (s *tunnelSet) handle(f frame) error {
	if len(f.payload) < 4 {
		return fmt.Errorf("%w: tunnel frame %q of %d bytes", ErrMalformedFrame, f.typ, len(f.payload))
	}
	key := tunnelKey{f.id, binary.BigEndian.Uint32(f.payload)}
	body := f.payload[4:]
	s.mu.Lock()
	end := s.ends[key]
	s.mu.Unlock()
	if end == nil {
		return nil
	}
	switch f.typ {
	case frameTunnelData:
		return end.push(body)
	case frameTunnelCredit:
		if len(body) != 4 {
			return fmt.Errorf("%w: tunnel credit of %d bytes", ErrMalformedFrame, len(body))
		}
		end.credit.add(int(binary.BigEndian.Uint32(body)))
	case frameTunnelEOF:
		_ = end.push(nil) // the end of data never overflows
	case frameTunnelReset:
		end.reset(false)
	}
	return nil
}

// dropRequest resets every tunnel of req: its request is over.
func (s *tunnelSet) dropRequest(req uint32) {
	for _, end := range s.snapshot(func(k tunnelKey) bool { return k.req == req }) {
		end.reset(true)
	}
}

// closeAll resets every tunnel and refuses new ones: the stream is over.
func (s *tunnelSet) closeAll() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	for _, end := range s.snapshot(func(tunnelKey) bool { return true }) {
		end.reset(false)
	}
}

func (s *tunnelSet) snapshot(match func(tunnelKey) bool) []*tunnelEnd {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*tunnelEnd
	for k, e := range s.ends {
		if match(k) {
			out = append(out, e)
		}
	}
	return out
}

// count is how many tunnels are open (tests read it).
func (s *tunnelSet) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ends)
}

// tunnelPayload is a tunnel frame's payload: the connection's number, then body.
func tunnelPayload(conn uint32, body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(body)), conn), body...)
}

// socketPair returns two connected stream sockets: ours, pumped to and from the frames, and
// the consumer's.
func socketPair() (*net.UnixConn, net.Conn, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("tunnel: socketpair: %w", err)
	}
	conn := func(fd int) (net.Conn, error) {
		f := os.NewFile(uintptr(fd), "tunnel")
		defer f.Close() // FileConn holds a duplicate
		return net.FileConn(f)
	}
	a, err := conn(fds[0])
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("tunnel: %w", err)
	}
	b, err := conn(fds[1])
	if err != nil {
		a.Close()
		return nil, nil, fmt.Errorf("tunnel: %w", err)
	}
	return a.(*net.UnixConn), b, nil
}

// tunnelEnd is one side of one tunnelled connection: sock, the socket pumped to and from
// the frames, and what is in flight each way.
type tunnelEnd struct {
	set  *tunnelSet
	key  tunnelKey
	sock *net.UnixConn

	mu     sync.Mutex
	queue  [][]byte // received, not yet written to sock
	queued int
	eof    bool    // the peer sends no more
	credit *credit // bytes this side may still send
	// wake signals the inbound pump (buffered, never blocks the read loop); done is closed
	// by reset.
	wake      chan struct{}
	done      chan struct{}
	resetOnce sync.Once
	pumps     sync.WaitGroup
}

// start runs the two pumps; the end is forgotten and its socket closed once both stop.
func (e *tunnelEnd) start() {
	e.pumps.Add(2)
	go e.outbound()
	go e.inbound()
	go func() {
		e.pumps.Wait()
		e.sock.Close()
		e.set.forget(e.key, e)
	}()
}

// push queues data from the peer for the socket; nil is the peer's end of data.
func (e *tunnelEnd) push(data []byte) error {
	e.mu.Lock()
	if data == nil {
		e.eof = true
	} else {
		if e.eof || e.queued+len(data) > tunnelWindow {
			e.mu.Unlock()
			return fmt.Errorf("%w: tunnel %d/%d: data past the end or beyond its credit", ErrMalformedFrame, e.key.req, e.key.conn)
		}
		e.queue = append(e.queue, data)
		e.queued += len(data)
	}
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return nil
}

// reset ends the connection at once both ways; tell says whether the peer is told (not when
// it is the peer that reset, or the stream is gone).
func (e *tunnelEnd) reset(tell bool) {
	e.resetOnce.Do(func() {
		close(e.done)
		e.sock.Close() // unblocks the pumps' reads and writes
		if tell {
			go func() { _ = e.set.send(frameTunnelReset, e.key.req, tunnelPayload(e.key.conn, nil)) }()
		}
		e.set.forget(e.key, e)
	})
}

// outbound sends what the consumer writes, within the peer's credit, then the end of data.
func (e *tunnelEnd) outbound() {
	defer e.pumps.Done()
	buf := make([]byte, tunnelChunk)
	for {
		n, ok := e.credit.take(len(buf), e.done, nil)
		if !ok {
			return
		}
		k, err := e.sock.Read(buf[:n])
		if k > 0 {
			if e.set.send(frameTunnelData, e.key.req, tunnelPayload(e.key.conn, buf[:k])) != nil {
				e.reset(false)
				return
			}
		}
		if n > k {
			e.credit.add(n - k) // taken, not sent
		}
		if err != nil {
			select {
			case <-e.done:
			default:
				_ = e.set.send(frameTunnelEOF, e.key.req, tunnelPayload(e.key.conn, nil))
			}
			return
		}
	}
}

// inbound writes what the peer sent to the socket, granting credit back as it goes; at the
// peer's end of data it half-closes the socket. A consumer that closed its end resets the
// connection, so that the peer stops sending.
func (e *tunnelEnd) inbound() {
	defer e.pumps.Done()
	for {
		e.mu.Lock()
		var data []byte
		if len(e.queue) > 0 {
			data = e.queue[0]
			e.queue = e.queue[1:]
		}
		eof := e.eof && data == nil
		e.mu.Unlock()
		switch {
		case data != nil:
			if _, err := e.sock.Write(data); err != nil {
				e.reset(true)
				return
			}
			e.mu.Lock()
			e.queued -= len(data)
			e.mu.Unlock()
			var b [4]byte
			binary.BigEndian.PutUint32(b[:], uint32(len(data)))
			if e.set.send(frameTunnelCredit, e.key.req, tunnelPayload(e.key.conn, b[:])) != nil {
				e.reset(false)
				return
			}
			continue
		case eof:
			_ = e.sock.CloseWrite()
			return
		}
		select {
		case <-e.wake:
		case <-e.done:
			return
		}
	}
}

// acceptTunnel takes a connection the helper opened for request cl: handed to the request's
// listener, or refused when the request asked for none.
func (c *Client) acceptTunnel(f frame, cl *call) error {
	if len(f.payload) != 4 {
		return fmt.Errorf("%w: tunnel open of %d bytes", ErrMalformedFrame, len(f.payload))
	}
	key := tunnelKey{f.id, binary.BigEndian.Uint32(f.payload)}
	ln := cl.tunnel
	c.tunnels.accept(key, func(conn net.Conn) bool { return ln != nil && ln.deliver(conn) })
	return nil
}

// tunnelListener is what a request's tunnels are accepted from on the host's side.
type tunnelListener struct {
	conns chan net.Conn
	done  chan struct{}

	mu     sync.Mutex // orders deliver against Close, so that no connection is left queued
	closed bool
}

func newTunnelListener() *tunnelListener {
	return &tunnelListener{conns: make(chan net.Conn, maxTunnels), done: make(chan struct{})}
}

// deliver queues conn for Accept; false when the listener is closed or its queue is full.
func (l *tunnelListener) deliver(conn net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	select {
	case l.conns <- conn:
		return true
	default:
		return false
	}
}

// Accept returns the next connection the command made.
func (l *tunnelListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting and closes the connections not yet accepted.
func (l *tunnelListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	close(l.done)
	for {
		select {
		case c := <-l.conns:
			c.Close()
		default:
			return nil
		}
	}
}

// Addr names the listener: it has no address of its own.
func (l *tunnelListener) Addr() net.Addr { return tunnelAddr{} }

type tunnelAddr struct{}

func (tunnelAddr) Network() string { return "tunnel" }
func (tunnelAddr) String() string  { return "helper-tunnel" }
