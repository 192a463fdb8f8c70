package helper

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/egress/egresstest"
)

// lineWriter hands the first line written to it to a channel.
type lineWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	line chan string
}

func (w *lineWriter) Write(p []byte) (int, error) { // the live copy's goroutine only
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if l, _, ok := strings.Cut(w.buf.String(), "\n"); ok && w.line != nil {
		w.line <- l
		w.line = nil
	}
	return len(p), nil
}

// tunnelledCommand runs, through c, a command that prints its HTTP_PROXY and waits for its
// stdin to close, its connections tunnelled to serve's listener. It returns the proxy URL
// the command was given and what ends the command.
func tunnelledCommand(t testing.TB, c *Client, serve func(net.Listener) func()) (proxy string, end func() error) {
	t.Helper()
	stdin, feed := io.Pipe()
	line := make(chan string, 1)
	req := shReq(t.TempDir(), `echo "$HTTP_PROXY"; cat >/dev/null`)
	req.Stdin, req.Stdout = stdin, &lineWriter{line: line}
	req.EgressTunnel = serve
	done := make(chan error, 1)
	go func() {
		res, err := c.Exec(ctxFor(t), req)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
		}
		done <- err
	}()
	select {
	case proxy = <-line:
	case err := <-done:
		t.Fatalf("the command ended before printing its proxy: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("no proxy printed")
	}
	var once sync.Once
	var err error
	end = func() error { once.Do(func() { feed.Close(); err = <-done }); return err }
	t.Cleanup(func() { _ = end() })
	return proxy, end
}

// TestExecEgressTunnel: a command's connections to its proxy port are carried over the
// helper's stream to the egress proxy on Airlock's side, as the call's: an allowed host
// answers (a body of several windows, so that credit must flow; many requests at once), a
// host off the list is refused and the refusal names the call; when the command ends no
// tunnel and no relay is left on either side. Not parallel: it counts the package's relays.
func TestExecEgressTunnel(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 3*tunnelWindow/16+7)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "got %d", len(b))
			return
		}
		w.Write(body)
	}))
	defer up.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(up.URL, "http://"))
	c := pair(t)
	p := egresstest.Start(t, []string{"allowed.test"}, egresstest.Names{"allowed.test": "127.0.0.1", "other.test": "127.0.0.1"})
	proxy, end := tunnelledCommand(t, c, func(ln net.Listener) func() { return p.ServeCall(ln, "call-7") })
	if !strings.HasPrefix(proxy, "http://127.0.0.1:") {
		t.Fatalf("HTTP_PROXY = %q", proxy)
	}
	u, _ := url.Parse(proxy)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), DisableKeepAlives: true}, Timeout: 20 * time.Second}

	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			resp, err := client.Get("http://allowed.test:" + port + "/big")
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != 200 || !bytes.Equal(got, body) {
				errs <- fmt.Errorf("GET %d: %d, %d bytes, %v", i, resp.StatusCode, len(got), err)
			}
		}()
		go func() {
			defer wg.Done()
			resp, err := client.Post("http://allowed.test:"+port+"/up", "application/octet-stream", bytes.NewReader(body))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if want := fmt.Sprintf("got %d", len(body)); string(got) != want {
				errs <- fmt.Errorf("POST %d: %d %q, want %q", i, resp.StatusCode, got, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	resp, err := client.Get("http://other.test:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(got), "not_allowlisted") {
		t.Fatalf("off the list: %d %q", resp.StatusCode, got)
	}
	if d := p.Denials.List(); len(d) != 1 || d[0].CallID != "call-7" {
		t.Fatalf("denials %+v, want one for call-7", d)
	}

	// A connection open when the command ends is cut.
	open, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if err := end(); err != nil {
		t.Fatal(err)
	}
	_ = open.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := open.Read(make([]byte, 1)); err == nil || n > 0 {
		t.Fatalf("a tunnelled connection survived the command: %d %v", n, err)
	}
	waitFor(t, "no tunnel left on the client's side", func() bool { return c.tunnels.count() == 0 })
	if n := openRelays.Load(); n != 0 {
		t.Fatalf("%d relays open after the command ended", n)
	}
}

// TestExecEgressTunnelHalfClose: a client that half-closes after its request, as
// `printf … | nc` does, still gets the whole response and then the end of the stream: each
// side's end of data crosses the tunnel as a half-close.
func TestExecEgressTunnelHalfClose(t *testing.T) {
	c := pair(t)
	proxy, _ := tunnelledCommand(t, c, func(ln net.Listener) func() {
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "whole answer")
		})}
		go srv.Serve(ln)
		return func() { srv.Close() }
	})
	if code, body := halfClosedGet(t, strings.TrimPrefix(proxy, "http://"), "http://allowed.test/"); code != 200 || body != "whole answer" {
		t.Fatalf("through a half-closed tunnel: %d %q", code, body)
	}
}

// TestTunnelRefusedWithoutListener: a tunnel the helper opens for a request that asked for
// none is reset, and nothing is kept on the host's side.
func TestTunnelRefusedWithoutListener(t *testing.T) {
	t.Parallel()
	var sent []frame
	var mu sync.Mutex
	set := newTunnelSet(func(t frameType, id uint32, p []byte) error {
		mu.Lock()
		sent = append(sent, frame{typ: t, id: id, payload: p})
		mu.Unlock()
		return nil
	})
	set.accept(tunnelKey{3, 1}, func(net.Conn) bool { return false })
	waitFor(t, "a reset sent", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(sent) == 1 && sent[0].typ == frameTunnelReset && sent[0].id == 3
	})
	if n := set.count(); n != 0 {
		t.Fatalf("%d tunnels kept", n)
	}
}

// TestTunnelPeerBeyondCredit: a peer that sends more than the credit it was given breaks
// the protocol (the stream is then closed), rather than making this side buffer it.
func TestTunnelPeerBeyondCredit(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	credited := 0
	set := newTunnelSet(func(typ frameType, _ uint32, p []byte) error {
		if typ == frameTunnelCredit {
			mu.Lock()
			credited += int(binary.BigEndian.Uint32(p[4:]))
			mu.Unlock()
		}
		return nil
	})
	var consumer net.Conn
	set.accept(tunnelKey{1, 1}, func(c net.Conn) bool { consumer = c; return true })
	defer consumer.Close()
	// Nobody reads the consumer's end: once the socket's buffer is full, what the peer
	// sends stays queued, and no more credit is given.
	// What was allowed is read before each frame: the socket may take more while the
	// frame is refused, and the credit for it then comes after the refusal.
	for sent := 0; ; sent += tunnelChunk {
		mu.Lock()
		allowed := tunnelWindow + credited
		mu.Unlock()
		err := set.handle(frame{typ: frameTunnelData, id: 1, payload: tunnelPayload(1, make([]byte, tunnelChunk))})
		if err != nil {
			if !errors.Is(err, ErrMalformedFrame) || sent+tunnelChunk <= allowed {
				t.Fatalf("refused at %d bytes with %d allowed: %v", sent+tunnelChunk, allowed, err)
			}
			return
		}
		if sent > allowed+tunnelWindow && sent > 64<<20 {
			t.Fatalf("%d bytes accepted with %d allowed", sent, allowed)
		}
	}
}

// TestTunnelLimitPerRequest: one request cannot hold more than maxTunnels connections.
func TestTunnelLimitPerRequest(t *testing.T) {
	t.Parallel()
	set := newTunnelSet(func(frameType, uint32, []byte) error { return nil })
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range maxTunnels + 1 {
		c, err := set.open(9)
		if i < maxTunnels && err != nil {
			t.Fatalf("tunnel %d: %v", i, err)
		}
		if i == maxTunnels {
			if err == nil {
				t.Fatal("a tunnel past the limit was opened")
			}
			break
		}
		conns = append(conns, c)
	}
	set.dropRequest(9)
	waitFor(t, "every tunnel of the request gone", func() bool { return set.count() == 0 })
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
