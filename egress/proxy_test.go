package egress

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/airlock-dev/airlock/urlguard"
)

// names is the test's resolver: every name points at loopback (where the test servers
// are) or at an internal address that must never be dialled.
type names map[string]string

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a, ok := n[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

type recorder struct {
	mu   sync.Mutex
	list []Denial
}

func (r *recorder) add(d Denial) { r.mu.Lock(); r.list = append(r.list, d); r.mu.Unlock() }
func (r *recorder) all() []Denial {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Denial(nil), r.list...)
}

type fixture struct {
	proxy    *Proxy
	addr     string
	allowed  *httptest.Server
	other    *httptest.Server
	hits     *atomic.Int32
	denials  *recorder
	allowedH string // allowed.test:port
	otherH   string
}

// newFixture: allowlist mode naming allowed.test only; allowed.test and other.test both
// resolve to loopback test servers; inside.test resolves to 10.0.0.1. Loopback is let
// through by the test-only allowance, nothing else is.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	var hits atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Proxy-Authorization") != "" {
			http.Error(w, "proxy credentials leaked upstream", 500)
			return
		}
		fmt.Fprintf(w, "hello from %s %s", r.Host, r.URL.Path)
	})
	allowed, other := httptest.NewServer(h), httptest.NewServer(h)
	t.Cleanup(allowed.Close)
	t.Cleanup(other.Close)
	g, err := urlguard.New(urlguard.Config{Mode: urlguard.ModeAllowlist, AllowDomains: []string{"allowed.test", "inside.test", "*.metadata.test"}},
		urlguard.WithResolver(names{"allowed.test": "127.0.0.1", "other.test": "127.0.0.1", "inside.test": "10.0.0.1", "x.metadata.test": "169.254.169.254"}),
		urlguard.AllowLoopbackForTesting())
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	p, err := New(g, WithOnDenied(rec.add), WithSession("s1"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(func() { p.Close() })
	_, ap, _ := net.SplitHostPort(strings.TrimPrefix(allowed.URL, "http://"))
	_, op, _ := net.SplitHostPort(strings.TrimPrefix(other.URL, "http://"))
	return &fixture{proxy: p, addr: ln.Addr().String(), allowed: allowed, other: other, hits: &hits, denials: rec,
		allowedH: "allowed.test:" + ap, otherH: "other.test:" + op}
}

func (f *fixture) client(user *url.Userinfo) *http.Client {
	u := &url.URL{Scheme: "http", Host: f.addr, User: user}
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}}
}

func get(t *testing.T, c *http.Client, u string) (int, string, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get("X-Airlock-Reason")
}

func TestPlainHTTPAllowlist(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client(nil)
	if code, body, _ := get(t, c, "http://"+f.allowedH+"/x"); code != 200 || !strings.Contains(body, "hello from "+f.allowedH+" /x") {
		t.Fatalf("allowed host: %d %q", code, body)
	}
	before := f.hits.Load()
	for _, tc := range []struct{ url, reason string }{
		{"http://" + f.otherH + "/", "not_allowlisted"},
		{"http://169.254.169.254/latest/meta-data/", "metadata"},
		{"http://inside.test:8080/", "private"},
		{"http://x.metadata.test/", "metadata"},
	} {
		code, _, reason := get(t, c, tc.url)
		if code != http.StatusForbidden || reason != tc.reason {
			t.Errorf("%s: %d %s, want 403 %s", tc.url, code, reason, tc.reason)
		}
	}
	if f.hits.Load() != before {
		t.Fatal("a refused request reached a server")
	}
	s := f.proxy.Stats()
	if s.Allowed != 1 || s.Denied != 4 || s.DeniedBy[urlguard.NotAllowlisted] != 1 || s.DeniedBy[urlguard.Metadata] != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func connect(t *testing.T, proxyAddr, target, auth string) (int, string, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if auth != "" {
		req += "Proxy-Authorization: " + auth + "\r\n"
	}
	fmt.Fprint(c, req+"\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	if resp.StatusCode != 200 {
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("X-Airlock-Reason"), nil
	}
	return 200, "", &bufConn{Conn: c, r: br}
}

type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufConn) Read(p []byte) (int, error) { return b.r.Read(p) }

func TestConnect(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	code, _, tun := connect(t, f.addr, f.allowedH, "")
	if code != 200 {
		t.Fatalf("CONNECT allowed: %d", code)
	}
	fmt.Fprintf(tun, "GET /tunnel HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", f.allowedH)
	resp, err := http.ReadResponse(bufio.NewReader(tun), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(b), "/tunnel") {
		t.Fatalf("through the tunnel: %q", b)
	}

	before := f.hits.Load()
	token, release := f.proxy.Token("call-7")
	defer release()
	auth := "Basic " + basic("call", token)
	for _, tc := range []struct{ target, reason string }{
		{"169.254.169.254:80", "metadata"},
		{"[fd00:ec2::254]:80", "metadata"},
		{"2852039166:80", "metadata"},
		{f.otherH, "not_allowlisted"},
		{"inside.test:443", "private"},
		{"127.0.0.1:22", "not_allowlisted"},
		{"allowed.test", "invalid_port"},
	} {
		code, reason, _ := connect(t, f.addr, tc.target, auth)
		if code != http.StatusForbidden || reason != tc.reason {
			t.Errorf("CONNECT %s: %d %s, want 403 %s", tc.target, code, reason, tc.reason)
		}
	}
	if f.hits.Load() != before {
		t.Fatal("a refused CONNECT reached a server")
	}
	ds := f.denials.all()
	if len(ds) != 7 || ds[0].CallID != "call-7" || ds[0].SessionID != "s1" || ds[0].Host != "169.254.169.254" || ds[0].Port != 80 || ds[0].Reason != urlguard.Metadata || ds[0].Method != "CONNECT" {
		t.Fatalf("denials: %+v", ds)
	}
	release()
	connect(t, f.addr, "169.254.169.254:80", auth)
	if ds := f.denials.all(); ds[len(ds)-1].CallID != "" {
		t.Fatalf("a released token still names its call: %+v", ds[len(ds)-1])
	}
}

func TestHTTPSClientThroughConnect(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "secure") }))
	defer tls.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(tls.URL, "https://"))
	tr := tls.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(&url.URL{Scheme: "http", Host: f.addr})
	tr.TLSClientConfig.ServerName = "example.com" // httptest's certificate names example.com
	resp, err := (&http.Client{Transport: tr}).Get("https://allowed.test:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "secure" {
		t.Fatalf("https through CONNECT: %q", b)
	}
	if _, err := (&http.Client{Transport: tr}).Get("https://other.test:" + port + "/"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Fatalf("https to a host not allowed: %v", err)
	}
}

func basic(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

// tunnelDialer dials addr through a CONNECT on the proxy.
func tunnelDialer(proxyAddr string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", proxyAddr)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			c.Close()
			return nil, err
		}
		if resp.StatusCode != 200 {
			c.Close()
			return nil, fmt.Errorf("CONNECT %s: %s", addr, resp.Status)
		}
		return &bufConn{Conn: c, r: br}, nil
	}
}
