package local

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/backendtest"
	"github.com/airlock-dev/airlock/backend/sandbox"
	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/egress/egresstest"
	"github.com/airlock-dev/airlock/urlguard"
)

// TestNetworkNone: a server on the host's loopback answers a command run with the host's
// network, and is unreachable from the same command with Network "none". Only loopback is
// touched.
func TestNetworkNone(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "host-server") })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	cmd := fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%s && printf 'GET / HTTP/1.0\r\n\r\n' >&3 && cat <&3; echo " rc=$?"`, port)

	run := func(network string) (string, backend.Description) {
		// The kernel sandbox's own TCP rules are lifted, so that only the namespace decides.
		e, err := New(Config{Workspace: t.TempDir(), Shell: bash, Network: network, DefaultTimeout: 20 * time.Second,
			Sandbox: SandboxConfig{Network: sandbox.Network{Unrestricted: true}}})
		if err != nil {
			t.Fatalf("New(network=%q): %v", network, err)
		}
		defer e.Close(context.Background())
		res, err := e.Exec(context.Background(), backend.Request{Command: cmd})
		if err != nil {
			t.Fatal(err)
		}
		return string(res.Stdout) + string(res.Stderr), e.Describe()
	}
	if out, d := run(NetworkHost); !strings.Contains(out, "host-server") || d.Capabilities.NetworkIsolation {
		t.Fatalf("host network: %q (isolation %v)", out, d.Capabilities.NetworkIsolation)
	}
	out, d := run(NetworkNone)
	if strings.Contains(out, "host-server") || strings.Contains(out, " rc=0") {
		t.Fatalf("network none reached the host's loopback server: %q", out)
	}
	if !d.Capabilities.NetworkIsolation || !strings.Contains(strings.Join(d.Notes, " "), "network namespace") {
		t.Fatalf("Describe under network none: %+v", d)
	}
	if _, err := New(Config{Workspace: t.TempDir(), Network: "allowlist"}); err == nil {
		t.Fatal(`Network "allowlist" accepted by the local backend`)
	}
}

// TestNetworkAllowlistLandlock: with Landlock allowing TCP connect only to the egress
// proxy's port, a command reaches the allowlisted server through the proxy, gets 403 for
// another, and cannot connect to the server directly. Only loopback is touched.
func TestNetworkAllowlistLandlock(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	allowedPort, otherPort := egresstest.Server(t, "allowed-server"), egresstest.Server(t, "other-server")
	px := egresstest.Start(t, []string{"allowed.test"}, egresstest.Names{"allowed.test": "127.0.0.1", "other.test": "127.0.0.1"})
	e, err := New(Config{Workspace: t.TempDir(), Shell: bash, Network: NetworkHost, DefaultTimeout: 20 * time.Second,
		Env:     map[string]string{"HTTP_PROXY": px.URL()},
		Sandbox: SandboxConfig{Network: sandbox.Network{ConnectTCP: []uint16{px.Port()}}}})
	if err != nil {
		t.Skipf("no enforced Landlock here: %v", err)
	}
	defer e.Close(context.Background())
	via := func(target string) string {
		return fmt.Sprintf(`p=${HTTP_PROXY#http://}; exec 3<>/dev/tcp/${p%%:*}/${p##*:} && printf 'GET http://%s/ HTTP/1.0\r\nHost: %s\r\n\r\n' >&3 && cat <&3; echo " rc=$?"`, target, target)
	}
	sh := func(cmd string) string {
		res, err := e.Exec(context.Background(), backend.Request{Command: cmd})
		if err != nil {
			t.Fatal(err)
		}
		return string(res.Stdout) + string(res.Stderr)
	}
	if out := sh(via("allowed.test:" + allowedPort)); !strings.Contains(out, "allowed-server") || !strings.Contains(out, " 200 ") {
		t.Fatalf("allowlisted server through the proxy: %q", out)
	}
	if out := sh(via("other.test:" + otherPort)); !strings.Contains(out, " 403 ") || strings.Contains(out, "other-server") {
		t.Fatalf("server not on the allowlist: %q", out)
	}
	if out := sh(fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%s && cat <&3; echo " rc=$?"`, allowedPort)); strings.Contains(out, "allowed-server") || strings.Contains(out, " rc=0") {
		t.Fatalf("direct connection past the proxy: %q", out)
	}

	if denied := px.Denials.List(); len(denied) != 1 || denied[0].Reason != urlguard.NotAllowlisted {
		t.Fatalf("denials: %+v", denied)
	}
}

// TestNetworkAllowlistRefusalNamesItsCall: two calls run at the same time on one
// environment, each through a socket of its own the helper relays to; each makes a request the proxy
// refuses, and each refusal names the call whose command made it — never the other. A
// connection no command of a call made (this test's own, or a command run outside any
// call) is recorded unattributed. Only loopback is touched.
func TestNetworkAllowlistRefusalNamesItsCall(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	px := egresstest.Start(t, []string{"allowed.test"}, egresstest.Names{"allowed.test": "127.0.0.1"})
	pln := px.Listener
	ws := t.TempDir()
	e, err := New(Config{Workspace: ws, Shell: bash, Network: NetworkHost, DefaultTimeout: 30 * time.Second,
		Env:       map[string]string{"HTTP_PROXY": px.URL()},
		Sandbox:   SandboxConfig{Network: sandbox.Network{ConnectTCP: []uint16{px.Port()}}},
		Attribute: func(o backend.ConnOwner) { px.SetOwner(egress.Owner(o)) },
		ServeCall: px.ServeCall})
	if err != nil {
		t.Skipf("no namespaces here: %v", err)
	}
	defer e.Close(context.Background())

	// Each command marks that it runs, waits for the other's mark (both calls are then
	// running), and asks the proxy for a host that is not allowlisted: a GET from one call,
	// a CONNECT from the other.
	cmd := func(me, other, request string) string {
		return fmt.Sprintf(`: > %[1]s; for i in $(seq 1 2000); do [ -e %[2]s ] && break; sleep 0.01; done; [ -e %[2]s ] || { echo "no overlap"; exit 9; }
p=${HTTP_PROXY#http://}; exec 3<>/dev/tcp/${p%%:*}/${p##*:} && printf '%[3]s' >&3 && cat <&3; echo " rc=$?"`, me, other, request)
	}
	calls := []struct{ id, command, host string }{
		{"call-a", cmd("a.mark", "b.mark", `GET http://a-denied.test/ HTTP/1.0\r\nHost: a-denied.test\r\n\r\n`), "a-denied.test"},
		{"call-b", cmd("b.mark", "a.mark", `CONNECT b-denied.test:443 HTTP/1.0\r\nHost: b-denied.test:443\r\n\r\n`), "b-denied.test"},
	}
	var run []backendtest.Call
	for _, c := range calls {
		run = append(run, backendtest.Call{ID: c.id, Command: c.command})
	}
	outs := backendtest.ExecCalls(context.Background(), e, run)
	for i, c := range calls {
		if !strings.Contains(outs[i], " 403 ") {
			t.Fatalf("%s: want a 403 from the proxy, got %q", c.id, outs[i])
		}
	}
	// Outside any call, and from this process: the session's, unattributed.
	if _, err := e.Exec(context.Background(), backend.Request{Command: cmd("c.mark", "c.mark", `GET http://no-call.test/ HTTP/1.0\r\nHost: no-call.test\r\n\r\n`)}); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", pln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET http://host-process.test/ HTTP/1.0\r\nHost: host-process.test\r\n\r\n")
	resp, _ := http.ReadResponse(bufio.NewReader(c), nil)
	c.Close()
	if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("own request: %+v", resp)
	}

	denied := px.Denials.ByHost()
	for _, c := range calls {
		d, ok := denied[c.host]
		if !ok || d.CallID != c.id || d.Unattributed != "" || d.Reason != urlguard.NotAllowlisted {
			t.Errorf("refusal of %s: %+v, want it on %s", c.host, d, c.id)
		}
	}
	for _, host := range []string{"no-call.test", "host-process.test"} {
		if d, ok := denied[host]; !ok || d.CallID != "" || d.Unattributed == "" {
			t.Errorf("refusal of %s: %+v, want it unattributed", host, d)
		} else {
			t.Logf("%s: unattributed: %s", host, d.Unattributed)
		}
	}
}
