package local

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/sandbox"
	"github.com/airlock-dev/airlock/egress"
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

type names map[string]string

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := n[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

// TestNetworkAllowlistLandlock: with Landlock allowing TCP connect only to the egress
// proxy's port, a command reaches the allowlisted server through the proxy, gets 403 for
// another, and cannot connect to the server directly. Only loopback is touched.
func TestNetworkAllowlistLandlock(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	serve := func(name string) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, name) })}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		return port
	}
	allowedPort, otherPort := serve("allowed-server"), serve("other-server")
	g, err := urlguard.New(urlguard.Config{Mode: urlguard.ModeAllowlist, AllowDomains: []string{"allowed.test"}},
		urlguard.WithResolver(names{"allowed.test": "127.0.0.1", "other.test": "127.0.0.1"}), urlguard.AllowLoopbackForTesting())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var denied []egress.Denial
	p, err := egress.New(g, egress.WithOnDenied(func(d egress.Denial) { mu.Lock(); denied = append(denied, d); mu.Unlock() }))
	if err != nil {
		t.Fatal(err)
	}
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(pln)
	t.Cleanup(func() { p.Close() })
	proxyPort := uint16(pln.Addr().(*net.TCPAddr).Port)

	e, err := New(Config{Workspace: t.TempDir(), Shell: bash, Network: NetworkHost, DefaultTimeout: 20 * time.Second,
		Env:     map[string]string{"HTTP_PROXY": "http://" + pln.Addr().String()},
		Sandbox: SandboxConfig{Network: sandbox.Network{ConnectTCP: []uint16{proxyPort}}}})
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

	mu.Lock()
	defer mu.Unlock()
	if len(denied) != 1 || denied[0].Reason != urlguard.NotAllowlisted {
		t.Fatalf("denials: %+v", denied)
	}
}
