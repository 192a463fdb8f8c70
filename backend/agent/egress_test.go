package agent

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

func TestRelayCarriesRequestsAndEndsWithClose(t *testing.T) {
	t.Parallel()
	r, err := startRelay(unixServer(t))
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(r.URL(), "http://")
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("relay listens on %s, want 127.0.0.1", addr)
	}
	// A client that half-closes after its request, as `printf … | nc` does, still gets the
	// whole response and then the end of the stream.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "GET http://allowed.test/x HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n")
	c.(*net.TCPConn).CloseWrite()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "via socket: GET http://allowed.test/x" {
		t.Fatalf("through the relay: %d %q", resp.StatusCode, body)
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
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("relay port still accepts after Close")
	}
}

func TestRelayWithoutSocketHangsUp(t *testing.T) {
	t.Parallel()
	r, err := startRelay(filepath.Join(t.TempDir(), "missing.sock"))
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
// NO_PROXY empty; the port closes with the command. A request without one is untouched.
func TestExecEgressSocketSetsProxyVars(t *testing.T) {
	t.Parallel()
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
	if conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), time.Second); err == nil {
		conn.Close()
		t.Fatalf("relay %s still accepts after the command ended", url)
	}

	plain := shReq(t.TempDir(), "env")
	plain.Env = append(plain.Env, "HTTP_PROXY=http://elsewhere:1")
	res, err = c.Exec(ctxFor(t), plain)
	if err != nil || !strings.Contains(string(res.Stdout), "HTTP_PROXY=http://elsewhere:1") || strings.Contains(string(res.Stdout), "127.0.0.1") {
		t.Fatalf("without an egress socket: %v %q", err, res.Stdout)
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
