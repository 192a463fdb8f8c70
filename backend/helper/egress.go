package helper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The egress relay: where a command's only network is its own loopback (a Docker container
// with network mode "none", [network] mode = "allowlist"), the helper gives each command that
// asks for it ([Request.EgressSocket]) a listener on 127.0.0.1 of its own and points the
// command's proxy variables at it. Every connection accepted there is relayed, byte for byte,
// to a unix socket that the host's side made for that call and served with Airlock's egress
// proxy, so the proxy is the only way out and a refusal names the call whose socket it came
// through. The helper reads nothing of what it relays: deciding is the proxy's job.

// EgressVars are the variables a relayed command's proxy URL is given in; NO_PROXY and
// no_proxy are set empty, so that no address skips the proxy.
var EgressVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}

// egressDialTimeout bounds the connect to the host's socket; it answers at once while the
// call lives.
const egressDialTimeout = 10 * time.Second

// openRelays counts relays started and not yet closed (tests read it).
var openRelays atomic.Int64

// relay is one command's listener and the connections it carries.
type relay struct {
	ln   net.Listener
	dial func(context.Context) (net.Conn, error)

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// startRelay listens on a free port of 127.0.0.1 and relays what arrives to what dial
// connects to.
func startRelay(dial func(context.Context) (net.Conn, error)) (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("egress relay: listen: %w", err)
	}
	r := &relay{ln: ln, dial: dial, conns: map[net.Conn]struct{}{}}
	openRelays.Add(1)
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

// URL is the proxy URL the command is given.
func (r *relay) URL() string { return "http://" + r.ln.Addr().String() }

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return // closed
		}
		if !r.track(c) {
			c.Close()
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer r.untrack(c)
			r.serve(c)
		}()
	}
}

func (r *relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
}

// serve copies one connection to the host's side (its socket, or a tunnel) and back,
// passing each side's end of data on as a half-close, so that a client that waits for the
// end of the response gets it. A host side that cannot be reached closes the connection: the
// command sees a proxy that hung up, never another way out.
func (r *relay) serve(c net.Conn) {
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), egressDialTimeout)
	up, err := r.dial(ctx)
	cancel()
	if err != nil {
		return
	}
	if !r.track(up) {
		up.Close()
		return
	}
	defer r.untrack(up)
	defer up.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if hc, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = hc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}

// Close stops accepting, cuts every relayed connection and waits for the relay's goroutines.
func (r *relay) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.ln.Close()
	r.wg.Wait()
	openRelays.Add(-1)
}

// egressEnv returns the command's environment and what ends its relay: unchanged when the
// request asks for none, else with the proxy variables naming a relay of its own (set last,
// over any the request carried, so that no duplicate can win) to the request's socket or
// through tunnels of request id.
func (s *server) egressEnv(id uint32, m startMsg) ([]string, func(), error) {
	switch {
	case m.EgressTunnel && m.EgressSocket != "":
		return nil, nil, errors.New("egress relay: a request names both a socket and a tunnel")
	case m.EgressTunnel:
		r, err := startRelay(func(context.Context) (net.Conn, error) { return s.tunnels.open(id) })
		if err != nil {
			return nil, nil, err
		}
		return withProxyEnv(m.Env, r.URL()), func() { r.Close(); s.tunnels.dropRequest(id) }, nil
	case m.EgressSocket == "":
		return m.Env, func() {}, nil
	}
	// Checked before the command starts, so that a socket the container does not see (a
	// daemon on another host mounts its own directory) fails the call with the reason
	// rather than running a command whose every connection would be hung up on.
	if fi, err := os.Stat(m.EgressSocket); err != nil || fi.Mode()&os.ModeSocket == 0 {
		return nil, nil, fmt.Errorf("egress relay: the egress proxy's socket %s is not here (%v): its directory is bind-mounted from Airlock's host, so the container runtime must run there", m.EgressSocket, statErr(fi, err))
	}
	r, err := startRelay(dialUnix(m.EgressSocket))
	if err != nil {
		return nil, nil, err
	}
	return withProxyEnv(m.Env, r.URL()), r.Close, nil
}

// dialUnix connects to the unix socket at path.
func dialUnix(path string) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
}

func statErr(fi os.FileInfo, err error) string {
	if err != nil {
		return err.Error()
	}
	return "a " + fi.Mode().Type().String() + ", not a socket"
}

// withProxyEnv replaces every proxy variable in env with url (NO_PROXY empty).
func withProxyEnv(env []string, url string) []string {
	drop := map[string]bool{"NO_PROXY": true, "no_proxy": true}
	for _, k := range EgressVars {
		drop[k] = true
	}
	out := make([]string, 0, len(env)+len(EgressVars)+2)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !drop[name] {
			out = append(out, kv)
		}
	}
	for _, k := range EgressVars {
		out = append(out, k+"="+url)
	}
	return append(out, "NO_PROXY=", "no_proxy=")
}
