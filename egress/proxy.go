package egress

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/urlguard"
)

// Denial is one refused request.
type Denial struct {
	CallID    string
	SessionID string
	Host      string
	Port      int
	Reason    urlguard.Reason
	Detail    string
	Method    string // CONNECT, GET, …
	// Unattributed says why CallID is empty: the refusal belongs to the session, and no
	// call is guessed.
	Unattributed string
}

// Owner names the call whose command holds the client end of a connection: client and
// server are the connection as the command sees it (the accepted connection's remote and
// local addresses). An error says why it cannot be told; the refusal is then recorded for
// the session as unattributed.
type Owner func(client, server netip.AddrPort) (callID string, err error)

// Stats are the proxy's counters since it started.
type Stats struct {
	Requests int64
	Allowed  int64
	Denied   int64
	// DeniedBy counts refusals by reason code.
	DeniedBy map[urlguard.Reason]int64
	// BytesUp and BytesDown count tunnelled and relayed body bytes.
	BytesUp, BytesDown int64
}

// Option configures a Proxy.
type Option func(*Proxy) error

// WithLogger sets the logger (default: none).
func WithLogger(l hclog.Logger) Option {
	return func(p *Proxy) error { p.log = l.Named("egress"); return nil }
}

// Observer is told of every request the proxy decides and of the bytes it carries: a
// metrics exporter (package metrics) implements it. Calls must be cheap; they are made on
// the request's path.
type Observer interface {
	// Request is one decision; reason is the URL guard's code for a refusal.
	Request(allowed bool, reason string)
	// Bytes are body or tunnel bytes carried (a tunnel's when it closes).
	Bytes(up, down int64)
}

// WithObserver sets the observer of decisions and bytes (default: none).
func WithObserver(o Observer) Option {
	return func(p *Proxy) error { p.obs = o; return nil }
}

// WithOnDenied sets the callback told about every refusal.
func WithOnDenied(fn func(Denial)) Option {
	return func(p *Proxy) error { p.onDenied = fn; return nil }
}

// WithSession names the session whose commands use this proxy, for refusals that carry no
// call token.
func WithSession(id string) Option {
	return func(p *Proxy) error { p.session = id; return nil }
}

// Proxy is an HTTP CONNECT and plain HTTP forward proxy guarded by a urlguard.Guard.
type Proxy struct {
	guard    *urlguard.Guard
	log      hclog.Logger
	onDenied func(Denial)
	session  string
	obs      Observer

	srv   *http.Server
	relay *httputil.ReverseProxy

	owner atomic.Pointer[Owner] // for connections to the listener given to Serve

	tokensMu sync.Mutex
	tokens   map[string]string // token → call id

	requests, allowed, denied atomic.Int64
	up, down                  atomic.Int64
	byMu                      sync.Mutex
	deniedBy                  map[urlguard.Reason]int64

	connsMu sync.Mutex
	conns   map[net.Conn]struct{}
	closed  bool
}

// New makes a proxy; Serve starts it.
func New(g *urlguard.Guard, opts ...Option) (*Proxy, error) {
	if g == nil {
		return nil, errors.New("egress: a URL guard is required")
	}
	p := &Proxy{guard: g, log: hclog.NewNullLogger(), tokens: map[string]string{},
		deniedBy: map[urlguard.Reason]int64{}, conns: map[net.Conn]struct{}{}}
	for _, o := range opts {
		if err := o(p); err != nil {
			return nil, err
		}
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           g.DialContext,
		MaxIdleConns:          64,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
	}
	p.relay = &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.Out.Header.Del("Proxy-Authorization") },
		Transport: tr,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var de *urlguard.DeniedError
			if errors.As(err, &de) {
				host, port := splitHostPortDefault(r.URL.Host, 80)
				p.refuse(w, r, urlguard.Decision{Reason: de.Reason, Detail: de.Detail, Target: urlguard.Target{Host: host, Port: port}})
				return
			}
			p.log.Debug("relay failed", "host", r.URL.Host, "error", err)
			http.Error(w, "egress: upstream failed: "+err.Error(), http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second, ConnState: p.track,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if o := p.owner.Load(); o != nil {
				return context.WithValue(ctx, connKey{}, connInfo{owner: *o, conn: c})
			}
			return ctx
		}}
	return p, nil
}

// SetOwner makes refusals of requests that arrive on the listener given to Serve name the
// call that owner finds behind each connection (on the local backend: the command whose
// process holds the client socket; see package sockowner).
func (p *Proxy) SetOwner(owner Owner) {
	if owner == nil {
		p.owner.Store(nil)
		return
	}
	p.owner.Store(&owner)
}

type connKey struct{}

// connInfo is how to name the call behind one accepted connection.
type connInfo struct {
	owner Owner
	conn  net.Conn
}

// Serve answers on ln until Close.
func (p *Proxy) Serve(ln net.Listener) error {
	err := p.srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops the proxy and cuts every open tunnel.
func (p *Proxy) Close() error {
	err := p.srv.Close()
	p.connsMu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.connsMu.Unlock()
	return err
}

func (p *Proxy) track(c net.Conn, s http.ConnState) {
	p.connsMu.Lock()
	defer p.connsMu.Unlock()
	switch s {
	case http.StateNew:
		p.conns[c] = struct{}{}
	case http.StateClosed:
		delete(p.conns, c)
	}
}

// Token returns proxy credentials that tie requests to callID, valid until release. Put
// them in the proxy URL (http://call:TOKEN@host:port): clients send them as
// Proxy-Authorization, and a refusal then names the call.
func (p *Proxy) Token(callID string) (token string, release func()) {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	token = hex.EncodeToString(b)
	p.tokensMu.Lock()
	p.tokens[token] = callID
	p.tokensMu.Unlock()
	return token, func() {
		p.tokensMu.Lock()
		delete(p.tokens, token)
		p.tokensMu.Unlock()
	}
}

type callKey struct{}

// ServeCall answers on ln (TCP or unix) for one call until release: every request that
// arrives there is the call's, so a refusal names it without any credentials in the
// command's environment (Airlock never passes URL credentials to commands). callID "" is a
// command that runs for no call: its refusals are recorded unattributed. Give the call's
// commands ln's address as their proxy. release closes ln and cuts what it carries.
func (p *Proxy) ServeCall(ln net.Listener, callID string) (release func()) {
	return p.serveOn(ln, func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, callKey{}, callID)
	})
}

// ServeOwned answers on ln — a listener the backend made, such as a port an SSH server
// forwards back — until release, naming the call of each refused request with owner.
func (p *Proxy) ServeOwned(ln net.Listener, owner Owner) (release func()) {
	return p.serveOn(ln, func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, connInfo{owner: owner, conn: c})
	})
}

func (p *Proxy) serveOn(ln net.Listener, connCtx func(context.Context, net.Conn) context.Context) (release func()) {
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 30 * time.Second,
		ConnState:         p.track,
		ConnContext:       connCtx,
	}
	go func() { _ = srv.Serve(ln) }()
	var once sync.Once
	return func() { once.Do(func() { _ = srv.Close() }) }
}

// callOf names the call a request belongs to, or says why it cannot.
func (p *Proxy) callOf(r *http.Request) (callID, unattributed string) {
	if id, ok := r.Context().Value(callKey{}).(string); ok {
		if id == "" {
			return "", "the command that made the connection runs for no call"
		}
		return id, ""
	}
	if ci, ok := r.Context().Value(connKey{}).(connInfo); ok {
		client, cok := addrPort(ci.conn.RemoteAddr())
		server, sok := addrPort(ci.conn.LocalAddr())
		if !cok || !sok {
			return "", fmt.Sprintf("the connection's addresses (%v, %v) are not TCP", ci.conn.RemoteAddr(), ci.conn.LocalAddr())
		}
		id, err := ci.owner(client, server)
		if err != nil {
			return "", err.Error()
		}
		if id == "" {
			return "", "the command that made the connection runs for no call"
		}
		return id, ""
	}
	if id := p.tokenCall(r); id != "" {
		return id, ""
	}
	return "", "the proxy port is shared by the session's calls"
}

// addrPort reads a TCP address, also from a net.Addr that only has the TCP address's
// String form (an SSH forwarded connection's).
func addrPort(a net.Addr) (netip.AddrPort, bool) {
	if a == nil {
		return netip.AddrPort{}, false
	}
	if t, ok := a.(*net.TCPAddr); ok {
		ap := t.AddrPort()
		return ap, ap.IsValid()
	}
	ap, err := netip.ParseAddrPort(a.String())
	return ap, err == nil
}

func (p *Proxy) tokenCall(r *http.Request) string {
	auth := r.Header.Get("Proxy-Authorization")
	enc, ok := strings.CutPrefix(auth, "Basic ")
	if !ok {
		return ""
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return ""
	}
	_, token, _ := strings.Cut(string(raw), ":")
	p.tokensMu.Lock()
	defer p.tokensMu.Unlock()
	return p.tokens[token]
}

// Stats returns the counters.
func (p *Proxy) Stats() Stats {
	s := Stats{Requests: p.requests.Load(), Allowed: p.allowed.Load(), Denied: p.denied.Load(),
		BytesUp: p.up.Load(), BytesDown: p.down.Load(), DeniedBy: map[urlguard.Reason]int64{}}
	p.byMu.Lock()
	for k, v := range p.deniedBy {
		s.DeniedBy[k] = v
	}
	p.byMu.Unlock()
	return s
}

// ServeHTTP handles one proxy request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		p.refuse(w, r, urlguard.Decision{Reason: urlguard.UnsupportedScheme,
			Detail: "the proxy relays absolute http:// URLs and CONNECT; send https through CONNECT"})
		return
	}
	host, port := splitHostPortDefault(r.URL.Host, 80)
	if d := p.check(r.Context(), host, port); !d.Allowed {
		p.refuse(w, r, d)
		return
	}
	p.allow()
	p.log.Debug("relay", "method", r.Method, "host", host, "port", port)
	var up, down atomic.Int64
	r.Body = countingReader{r.Body, &up}
	p.relay.ServeHTTP(countingWriter{w, &down}, r)
	p.carried(up.Load(), down.Load())
}

func (p *Proxy) allow() {
	p.allowed.Add(1)
	if p.obs != nil {
		p.obs.Request(true, "")
	}
}

// carried counts bytes that went through.
func (p *Proxy) carried(up, down int64) {
	p.up.Add(up)
	p.down.Add(down)
	if p.obs != nil {
		p.obs.Bytes(up, down)
	}
}

// check is the decision on arrival: the domain rules first (no lookup for a refused name),
// then the full check with every resolved address.
func (p *Proxy) check(ctx context.Context, host string, port int) urlguard.Decision {
	if d := p.guard.AllowsHost(host); !d.Allowed {
		d.Target.Port = port
		return d
	}
	return p.guard.CheckHost(ctx, host, port)
}

func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	host, portStr, err := net.SplitHostPort(r.Host)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil || port < 1 || port > 65535 {
		p.refuse(w, r, urlguard.Decision{Reason: urlguard.InvalidPort, Detail: "CONNECT needs host:port, got " + r.Host})
		return
	}
	d := p.check(r.Context(), host, port)
	if !d.Allowed {
		p.refuse(w, r, d)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	upstream, err := p.guard.DialContext(ctx, "tcp", net.JoinHostPort(host, portStr))
	cancel()
	if err != nil {
		var de *urlguard.DeniedError
		if errors.As(err, &de) {
			p.refuse(w, r, urlguard.Decision{Reason: de.Reason, Detail: de.Detail, Target: urlguard.Target{Host: d.Target.Host, Port: port}})
			return
		}
		http.Error(w, "egress: connect failed: "+err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "egress: cannot tunnel on this connection", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	p.allow()
	p.log.Debug("tunnel", "host", host, "port", port)
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
		client.Close()
		upstream.Close()
		return
	}
	p.connsMu.Lock()
	if p.closed {
		p.connsMu.Unlock()
		client.Close()
		upstream.Close()
		return
	}
	p.conns[upstream] = struct{}{}
	p.connsMu.Unlock()
	defer func() {
		p.connsMu.Lock()
		delete(p.conns, upstream)
		p.connsMu.Unlock()
	}()
	done := make(chan struct{}, 2)
	var up, down int64
	go func() {
		// Bytes the client sent after the CONNECT line that the server already buffered.
		up, _ = io.Copy(upstream, io.MultiReader(io.LimitReader(buf, int64(buf.Reader.Buffered())), client))
		if hc, ok := upstream.(interface{ CloseWrite() error }); ok {
			hc.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		down, _ = io.Copy(client, upstream)
		// A client on a unix socket (the Docker backend's per-call relay) is half-closed too.
		if hc, ok := client.(interface{ CloseWrite() error }); ok {
			hc.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
	p.carried(up, down)
	client.Close()
	upstream.Close()
}

// refuse answers 403 with the reason, and logs, counts and reports the refusal.
func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, d urlguard.Decision) {
	p.denied.Add(1)
	p.byMu.Lock()
	p.deniedBy[d.Reason]++
	p.byMu.Unlock()
	if p.obs != nil {
		p.obs.Request(false, string(d.Reason))
	}
	host, port := d.Target.Host, d.Target.Port
	if host == "" {
		h := r.Host
		if r.Method != http.MethodConnect && r.URL.Host != "" {
			h = r.URL.Host
		}
		host, port = splitHostPortDefault(h, 80)
	}
	call, unattributed := p.callOf(r)
	if call != "" {
		p.log.Info("request refused", "method", r.Method, "host", host, "port", port, "reason", string(d.Reason), "call_id", call)
	} else {
		p.log.Info("request refused", "method", r.Method, "host", host, "port", port, "reason", string(d.Reason), "unattributed", unattributed)
	}
	if p.onDenied != nil {
		p.onDenied(Denial{CallID: call, SessionID: p.session, Host: host, Port: port, Reason: d.Reason, Detail: d.Detail, Method: r.Method, Unattributed: unattributed})
	}
	w.Header().Set("X-Airlock-Reason", string(d.Reason))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprintf(w, "airlock egress proxy: %s:%d refused: %s (%s)\n", host, port, d.Reason, d.Reason.Describe())
}

func splitHostPortDefault(hostport string, def int) (string, int) {
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		return strings.Trim(hostport, "[]"), def
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return host, 0
	}
	return host, port
}

type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countingReader) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	c.n.Add(int64(n))
	return n, err
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n.Add(int64(n))
	return n, err
}

func (c countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
