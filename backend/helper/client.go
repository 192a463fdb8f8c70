package helper

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/procgroup"
)

// ClientOptions adjusts a client.
type ClientOptions struct {
	// Logger receives diagnostics (default: none).
	Logger hclog.Logger
}

// Client is the host's end of one helper stream. It is safe for concurrent use: each Exec is
// a request of its own, multiplexed with the others.
type Client struct {
	w   io.WriteCloser
	wmu sync.Mutex
	// sentEnv is the environment of the last start frame written (wmu guards it), and
	// envSent whether there was one.
	sentEnv []string
	envSent bool
	log     hclog.Logger

	ready     chan struct{} // closed once the server's hello was accepted
	done      chan struct{} // closed when the stream is over
	closeOnce sync.Once

	mu      sync.Mutex
	err     error // why the stream ended; set before done is closed
	peer    hello // the server's hello
	nextID  uint32
	pending map[uint32]*call
	// tunnels carries the connections of commands run with Request.EgressTunnel.
	tunnels *tunnelSet
}

// call is the client's state for one request. The read loop only appends, signals and
// never blocks on it.
type call struct {
	limit int64 // bytes kept per stream: the server caps, this guards against a bad server

	mu             sync.Mutex
	stdout, stderr []byte
	credit         *credit // stdin's

	exit     chan exitMsg
	fileDone chan fileDoneMsg // set for a file operation
	// ownerDone is set for an owner request (owner.go); callID is the call a command runs
	// for, as its Exec's context named it.
	ownerDone chan ownerDoneMsg
	callID    string
	// tunnel takes the command's connections (Request.EgressTunnel); nil refuses them.
	tunnel   *tunnelListener
	finished chan struct{}
	live     *liveCopy // nil unless the request asked for live output
}

func (c *call) add(dst *[]byte, p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - int64(len(*dst)); room > 0 {
		*dst = append(*dst, p[:min(int64(len(p)), room)]...)
	}
}

// NewClient starts reading r and sends the client's hello on w. Closing the client closes w,
// which tells the server to kill what is still running and exit.
func NewClient(r io.Reader, w io.WriteCloser, opts ClientOptions) *Client {
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	c := &Client{
		w:       w,
		log:     log,
		ready:   make(chan struct{}),
		done:    make(chan struct{}),
		pending: map[uint32]*call{},
	}
	c.tunnels = newTunnelSet(c.send)
	// Buffered: a frame is then one read of the stream, not three.
	go c.readLoop(bufio.NewReaderSize(r, 64<<10))
	// The hello goes first on the stream, but NewClient must not block on a peer that does
	// not read: the lock taken here is released by the goroutine once the hello is written.
	c.wmu.Lock()
	go func() {
		defer c.wmu.Unlock()
		if err := writeFrame(c.w, frame{typ: frameHello, payload: mustJSON(hello{Version: ProtocolVersion, Role: "client"})}); err != nil {
			c.fail(fmt.Errorf("send hello: %w", err))
		}
	}()
	return c
}

// Done is closed when the stream has ended, after which Exec fails with
// backend.ErrUnavailable; Err says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns why the stream ended, or nil while it is alive.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Why says why a helper is not serving, for a repair's notes: what, then, when c is
// known and its stream ended, the reason it ended.
func Why(c *Client, what string) string {
	if c != nil {
		if err := c.Err(); err != nil {
			return what + " (" + err.Error() + ")"
		}
	}
	return what
}

// Ready waits until the server's hello arrived and was accepted.
func (c *Client) Ready(ctx context.Context) error {
	select {
	case <-c.ready:
		return nil
	case <-c.done:
		return fmt.Errorf("%w: helper: %w", backend.ErrUnavailable, c.Err())
	case <-ctx.Done():
		return fmt.Errorf("helper: waiting for hello: %w", ctx.Err())
	}
}

// Close ends the stream: the server kills whatever still runs. Calls in flight fail. The
// writer is closed without waiting for a write in progress, which it must allow (pipes and
// network connections do), so that a peer that stopped reading cannot hold Close.
func (c *Client) Close() error {
	c.fail(backend.ErrClosed)
	// Let a frame being written finish, so the helper sees a clean end of stream rather than
	// half a frame; a write stuck on a helper that stopped reading gets a second, then the
	// stream is closed under it.
	locked := make(chan struct{})
	go func() { c.wmu.Lock(); close(locked) }()
	select {
	case <-locked:
		defer c.wmu.Unlock()
	case <-time.After(closeWait):
		go func() { <-locked; c.wmu.Unlock() }()
	}
	return c.w.Close()
}

// closeWait bounds how long Close waits for a frame being written.
const closeWait = time.Second

func (c *Client) fail(err error) {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		close(c.done)
		c.tunnels.closeAll()
	})
}

func (c *Client) send(t frameType, id uint32, payload []byte) error {
	return c.sendFrames(frame{typ: t, id: id, payload: payload})
}

// sendFrames writes fs together, with one write.
func (c *Client) sendFrames(fs ...frame) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return writeFrames(c.w, fs...)
}

// sendStart sends a start frame. An environment equal to the one the previous start carried
// is not sent again: the frame says SameEnv, and the server, which reads the frames in the
// order they were written, takes the one it kept.
func (c *Client) sendStart(id uint32, m startMsg) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	env := m.Env
	same := c.envSent && slices.Equal(env, c.sentEnv)
	if same {
		m.Env, m.SameEnv = nil, true
	}
	if err := writeFrame(c.w, frame{typ: frameStart, id: id, payload: m.encode()}); err != nil {
		return err
	}
	if !same {
		c.sentEnv, c.envSent = slices.Clone(env), true
	}
	return nil
}

func (c *Client) readLoop(r io.Reader) {
	f, err := readFrame(r)
	if err == nil {
		err = checkHello(f, "server")
	}
	if err != nil {
		c.fail(fmt.Errorf("handshake: %w", err))
		return
	}
	c.rememberHello(f.payload)
	close(c.ready)
	for {
		f, err := readFrame(r)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("stream closed by the helper")
			}
			c.fail(err)
			return
		}
		if err := c.dispatch(f); err != nil {
			c.log.Warn("helper protocol error", "error", err)
			c.fail(err)
			return
		}
	}
}

func (c *Client) dispatch(f frame) error {
	c.mu.Lock()
	cl := c.pending[f.id]
	c.mu.Unlock()
	if cl == nil {
		// A late frame for a request already given up on.
		return nil
	}
	switch f.typ {
	case frameStdout:
		cl.add(&cl.stdout, f.payload)
	case frameStderr:
		cl.add(&cl.stderr, f.payload)
	case frameLiveStdout, frameLiveStderr:
		if cl.live != nil {
			cl.live.push(f.typ == frameLiveStderr, f.payload)
		}
	case frameWindow:
		if len(f.payload) != 4 {
			return fmt.Errorf("%w: window of %d bytes", ErrMalformedFrame, len(f.payload))
		}
		cl.credit.add(int(binary.BigEndian.Uint32(f.payload)))
	case frameExit:
		m, err := decodeExitMsg(f.payload)
		if err != nil {
			return fmt.Errorf("%w: exit: %w", ErrMalformedFrame, err)
		}
		select {
		case cl.exit <- m:
		default:
			return fmt.Errorf("%w: second exit for request %d", ErrMalformedFrame, f.id)
		}
	case frameFileData, frameFileDone:
		return cl.fileFrame(f)
	case frameOwnerDone:
		return cl.ownerFrame(f)
	case frameTunnelOpen:
		return c.acceptTunnel(f, cl)
	case frameTunnelData, frameTunnelCredit, frameTunnelEOF, frameTunnelReset:
		return c.tunnels.handle(f)
	default:
		return fmt.Errorf("%w: unexpected %q from server", ErrMalformedFrame, f.typ)
	}
	return nil
}

// Exec runs req through the helper. Like [backend.Environment.Exec], a command that ran is a
// Result whatever its exit code; cancelling ctx kills the command's tree on the server and
// still returns what it printed.
func (c *Client) Exec(ctx context.Context, req Request) (backend.Result, error) {
	if err := c.Ready(ctx); err != nil {
		return backend.Result{}, err
	}
	m := startMsgOf(req)
	cl := &call{
		limit:    m.MaxOutputBytes + 256, // room for the truncation marker
		credit:   newCredit(stdinWindow),
		exit:     make(chan exitMsg, 1),
		finished: make(chan struct{}),
		callID:   backend.CallFrom(ctx),
	}
	if m.Live {
		cl.live = newLiveCopy(req.Stdout, req.Stderr)
		// Every live frame came before the exit: all of it is written before Exec returns.
		defer cl.live.finish()
	}
	id, release := c.register(cl)
	defer release()
	if req.EgressTunnel != nil {
		cl.tunnel = newTunnelListener()
		stop := req.EgressTunnel(cl.tunnel)
		defer func() {
			cl.tunnel.Close()
			c.tunnels.dropRequest(id)
			stop()
		}()
	}

	start := time.Now()
	if err := c.sendStart(id, m); err != nil {
		c.fail(fmt.Errorf("send: %w", err))
		return backend.Result{}, fmt.Errorf("%w: helper: send start: %w", backend.ErrUnavailable, err)
	}
	if req.Stdin != nil {
		go c.pumpStdin(id, cl, req.Stdin)
	}
	return c.await(ctx, id, cl, req, start)
}

// startMsgOf is the start message of req.
func startMsgOf(req Request) startMsg {
	m := startMsg{
		Argv:           req.Argv,
		Command:        req.Command,
		Dir:            req.Dir,
		Workspace:      req.Workspace,
		Env:            req.Env,
		Stdin:          req.Stdin != nil,
		TimeoutMS:      req.Timeout.Milliseconds(),
		KillGraceMS:    req.KillGrace.Milliseconds(),
		MaxOutputBytes: req.MaxOutputBytes,
		Live:           req.Stdout != nil || req.Stderr != nil,
		EgressSocket:   req.EgressSocket,
		EgressTunnel:   req.EgressTunnel != nil,
	}
	if m.MaxOutputBytes <= 0 {
		m.MaxOutputBytes = backend.DefaultMaxOutputBytes
	}
	if req.Timeout > 0 && m.TimeoutMS == 0 {
		m.TimeoutMS = 1
	}
	return m
}

// await waits for the exit of request id, started at start: a cancelled ctx is passed on to
// the helper, which kills the command's tree and still answers.
func (c *Client) await(ctx context.Context, id uint32, cl *call, req Request, start time.Time) (backend.Result, error) {
	// The helper enforces the timeout; the host only makes sure a helper that stopped
	// answering (killed, frozen with SIGSTOP by a command) cannot hold the call forever.
	grace := req.KillGrace
	if grace <= 0 {
		grace = procgroup.DefaultKillGrace
	}
	var deadline <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout + grace + procgroup.PipeDrain + answerMargin)
		defer t.Stop()
		deadline = t.C
	}
	ctxDone := ctx.Done()
	cancelled := false
	for {
		select {
		case x := <-cl.exit:
			res, err := c.result(x, cl, start, cancelled)
			res.Streamed = err == nil && cl.live != nil
			return res, err
		case <-ctxDone:
			ctxDone = nil
			cancelled = true
			// Sent aside: a helper that stopped reading must not block this call.
			go func() {
				if err := c.send(frameCancel, id, nil); err != nil {
					c.fail(fmt.Errorf("send: %w", err))
				}
			}()
			t := time.NewTimer(grace + procgroup.PipeDrain + answerMargin)
			defer t.Stop()
			deadline = t.C
		case <-deadline:
			err := fmt.Errorf("the helper did not answer within %s of the command's end; it is treated as dead", grace+procgroup.PipeDrain+answerMargin)
			c.abandon(err)
			return backend.Result{}, fmt.Errorf("%w: helper: %w", backend.ErrUnavailable, err)
		case <-c.done:
			return backend.Result{}, fmt.Errorf("%w: helper: %w", backend.ErrUnavailable, c.Err())
		}
	}
}

// answerMargin is how long past a command's timeout and kill grace the client waits for the
// helper's answer before it gives the helper up.
const answerMargin = 5 * time.Second

// abandon marks the stream dead and closes it under any write stuck on it, so that every
// waiting call returns and the backend starts a new helper.
func (c *Client) abandon(err error) {
	c.fail(err)
	_ = c.w.Close()
}

func (c *Client) result(x exitMsg, cl *call, start time.Time, cancelled bool) (backend.Result, error) {
	switch x.ErrorKind {
	case "":
	case kindInvalid:
		return backend.Result{}, fmt.Errorf("%w: %s", backend.ErrInvalidRequest, x.Error)
	case kindOutside:
		return backend.Result{}, fmt.Errorf("%w: %s", backend.ErrOutsideWorkspace, x.Error)
	default:
		return backend.Result{}, fmt.Errorf("helper: %s", x.Error)
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return backend.Result{
		ExitCode:    x.ExitCode,
		Stdout:      cl.stdout,
		Stderr:      cl.stderr,
		Truncated:   x.Truncated,
		StdoutBytes: x.StdoutBytes,
		StderrBytes: x.StderrBytes,
		Duration:    time.Since(start),
		TimedOut:    x.TimedOut,
		Cancelled:   x.Cancelled || (cancelled && !x.TimedOut),
	}, nil
}

// pumpStdin streams r to the server within the request's credit, then closes stdin.
func (c *Client) pumpStdin(id uint32, cl *call, r io.Reader) {
	buf := make([]byte, stdinChunk)
	for {
		n, err := r.Read(buf)
		for off := 0; off < n; {
			k, ok := cl.credit.take(n-off, cl.finished, c.done)
			if !ok {
				return
			}
			if c.send(frameStdin, id, buf[off:off+k]) != nil {
				return
			}
			off += k
		}
		if err != nil {
			select {
			case <-cl.finished:
			default:
				_ = c.send(frameStdinClose, id, nil)
			}
			return
		}
		select {
		case <-cl.finished:
			return
		default:
		}
	}
}

// register gives cl the next call id (never 0) and records it as pending; release ends the
// call and forgets it. Exec and FileOp share it.
func (c *Client) register(cl *call) (id uint32, release func()) {
	c.mu.Lock()
	c.nextID++
	if c.nextID == 0 {
		c.nextID++
	}
	id = c.nextID
	c.pending[id] = cl
	c.mu.Unlock()
	return id, func() {
		close(cl.finished)
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}
}
