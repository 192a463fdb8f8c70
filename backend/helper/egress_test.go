package helper

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/urlguard"
)

// unixServer serves an HTTP handler that names the request's target on a unix socket in a
// directory of the test's, standing in for the host's per-call socket.
func unixServer(t testing.TB) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "call.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "via socket: %s %s", r.Method, r.URL)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock
}

// halfClosedGet sends a GET of url to the proxy at addr, half-closes the connection and
// returns the answer's status and body.
func halfClosedGet(t testing.TB, addr, url string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n", url)
	c.(*net.TCPConn).CloseWrite()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestRelayCarriesRequestsAndEndsWithClose(t *testing.T) {
	r, err := startRelay(dialUnix(unixServer(t)))
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(r.URL(), "http://")
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("relay listens on %s, want 127.0.0.1", addr)
	}
	// A client that half-closes after its request, as `printf … | nc` does, still gets the
	// whole response and then the end of the stream.
	if code, body := halfClosedGet(t, addr, "http://allowed.test/x"); code != 200 || body != "via socket: GET http://allowed.test/x" {
		t.Fatalf("through the relay: %d %q", code, body)
	}

	// A connection still open when the command ends is cut, and the port stops accepting.
	open, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	fmt.Fprint(open, "GET http://allowed.test/y HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
	if _, err := http.ReadResponse(bufio.NewReader(open), nil); err != nil {
		t.Fatal(err)
	}
	r.Close()
	_ = open.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := open.Read(make([]byte, 1)); err == nil || n > 0 {
		t.Fatalf("relayed connection survived Close: %d %v", n, err)
	}
	// Asked of the listener itself: a dial could meet another test's listener on the reused
	// port number.
	if _, err := r.ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("relay listener after Close: %v", err)
	}
}

func TestRelayWithoutSocketHangsUp(t *testing.T) {
	r, err := startRelay(dialUnix(filepath.Join(t.TempDir(), "missing.sock")))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := net.Dial("tcp", strings.TrimPrefix(r.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err == nil || n > 0 {
		t.Fatalf("read %d bytes, err %v; want the connection closed", n, err)
	}
}

// TestExecEgressSocketSetsProxyVars: a request with an egress socket runs with every proxy
// variable naming its own relay port on 127.0.0.1 — over the ones the request carried — and
// NO_PROXY empty; the relay is closed when the command ends. A request without one is
// untouched. Not parallel: it counts the package's open relays.
func TestExecEgressSocketSetsProxyVars(t *testing.T) {
	c := pair(t)
	req := shReq(t.TempDir(), "env")
	req.Env = append(req.Env, "HTTP_PROXY=http://elsewhere:1", "NO_PROXY=*", "https_proxy=http://elsewhere:2")
	req.EgressSocket = unixServer(t)
	res, err := c.Exec(ctxFor(t), req)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %v %+v", err, res)
	}
	vars := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		k, v, _ := strings.Cut(l, "=")
		vars[k] = append(vars[k], v)
	}
	url := ""
	for _, k := range EgressVars {
		if len(vars[k]) != 1 || !strings.HasPrefix(vars[k][0], "http://127.0.0.1:") || url != "" && vars[k][0] != url {
			t.Fatalf("%s = %q (env %q)", k, vars[k], res.Stdout)
		}
		url = vars[k][0]
	}
	for _, k := range []string{"NO_PROXY", "no_proxy"} {
		if len(vars[k]) != 1 || vars[k][0] != "" {
			t.Fatalf("%s = %q", k, vars[k])
		}
	}
	if n := openRelays.Load(); n != 0 {
		t.Fatalf("%d relays open after the command ended", n)
	}

	plain := shReq(t.TempDir(), "env")
	plain.Env = append(plain.Env, "HTTP_PROXY=http://elsewhere:1")
	res, err = c.Exec(ctxFor(t), plain)
	if err != nil || !strings.Contains(string(res.Stdout), "HTTP_PROXY=http://elsewhere:1") || strings.Contains(string(res.Stdout), "127.0.0.1") {
		t.Fatalf("without an egress socket: %v %q", err, res.Stdout)
	}
}

// TestExecEgressSocketMissing: a socket the helper cannot see fails the call with the
// reason before the command starts.
func TestExecEgressSocketMissing(t *testing.T) {
	t.Parallel()
	c := pair(t)
	dir := t.TempDir()
	req := shReq(dir, "touch ran")
	req.EgressSocket = filepath.Join(dir, "missing.sock")
	_, err := c.Exec(ctxFor(t), req)
	if err == nil || !strings.Contains(err.Error(), "missing.sock is not here") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("the command ran")
	}
}

func TestWithProxyEnv(t *testing.T) {
	t.Parallel()
	got := withProxyEnv([]string{"A=1", "http_proxy=x", "ALL_PROXY=y", "no_proxy=z", "B=2"}, "http://127.0.0.1:9")
	want := []string{"A=1", "B=2"}
	for _, k := range EgressVars {
		want = append(want, k+"=http://127.0.0.1:9")
	}
	want = append(want, "NO_PROXY=", "no_proxy=")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

type benchNames map[string]string

func (n benchNames) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := n[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, errors.New("no such host")
}

// BenchmarkEgressRelay times one small HTTP request through Airlock's egress proxy (the real
// one, package egress) on each path a command's traffic can take, in the same run, reported
// as the metrics PATH_ns/req:
//
//   - direct: no proxy, for scale;
//   - proxy_tcp: straight to the proxy's TCP port — the path of earlier versions, where the
//     container reached the proxy on its internal network's gateway;
//   - proxy_relay: to the helper's loopback port, relayed to a unix socket the proxy serves
//     as the call's — Docker's path (what the container adds, its own loopback and a bind
//     mount, is the same kernel objects);
//   - proxy_tunnel: to the loopback port of a command run through a helper (in-process, over
//     two pipes), each connection tunnelled over the helper's stream to a listener the proxy
//     serves as the call's — Kubernetes' path, without the API server's exec stream.
//
// Each request opens a new connection, as a command's curl or wget does; the difference
// proxy_relay − proxy_tcp is what the relay adds per request. All traffic is on loopback.
// (ns/op is a whole round, meaningless on its own.)
//
//	go test -run x -bench EgressRelay -benchtime 40x ./backend/helper/
func BenchmarkEgressRelay(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	b.Cleanup(up.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(up.URL, "http://"))
	g, err := urlguard.New(urlguard.Config{Mode: urlguard.ModeAllowlist, AllowDomains: []string{"bench.test"}},
		urlguard.WithResolver(benchNames{"bench.test": "127.0.0.1"}), urlguard.AllowLoopbackForTesting())
	if err != nil {
		b.Fatal(err)
	}
	p, err := egress.New(g)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go p.Serve(tcp)
	sock := filepath.Join(b.TempDir(), "call.sock")
	uln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.ServeCall(uln, "bench-call"))
	r, err := startRelay(dialUnix(sock))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.Close)
	tunnelProxy, _ := tunnelledCommand(b, pair(b), func(ln net.Listener) func() { return p.ServeCall(ln, "bench-call") })

	client := func(proxy string) *http.Client {
		tr := &http.Transport{DisableKeepAlives: true}
		if proxy != "" {
			u, _ := url.Parse(proxy)
			tr.Proxy = http.ProxyURL(u)
		}
		return &http.Client{Transport: tr}
	}
	// Rounds interleave the paths (a batch on each in turn), so that the load of a shared
	// machine falls on all three alike; each figure is the median over the rounds of the
	// batch's time per request.
	const batch = 50
	paths := []struct {
		name, proxy, target string
	}{
		{"direct", "", up.URL + "/"},
		{"proxy_tcp", "http://" + tcp.Addr().String(), "http://bench.test:" + port + "/"},
		{"proxy_relay", r.URL(), "http://bench.test:" + port + "/"},
		{"proxy_tunnel", tunnelProxy, "http://bench.test:" + port + "/"},
	}
	per := make([][]float64, len(paths))
	for range b.N {
		for i, pa := range paths {
			c := client(pa.proxy)
			start := time.Now()
			for range batch {
				resp, err := c.Get(pa.target)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || string(body) != "ok" {
					b.Fatalf("%s: %d %q", pa.name, resp.StatusCode, body)
				}
			}
			per[i] = append(per[i], float64(time.Since(start).Nanoseconds())/batch)
		}
	}
	b.StopTimer()
	for i, pa := range paths {
		v := per[i]
		sort.Float64s(v)
		b.ReportMetric(v[len(v)/2], pa.name+"_ns/req")
	}
}
