package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/network"

	"github.com/airlock-dev/airlock/backend/docker/dockertest"
)

// gatewayServer creates a labelled bridge network for the test and serves name over HTTP on
// its gateway address on the host: an address on a Docker network the test created, the only
// kind besides loopback that these tests touch.
func gatewayServer(t *testing.T, prefix, name string) string {
	t.Helper()
	cli := dockertest.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cli.NetworkCreate(ctx, prefix+name, network.CreateOptions{Driver: "bridge", Labels: map[string]string{"dev.airlock.test": "egress"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = cli.NetworkRemove(cctx, resp.ID)
	})
	info, err := cli.NetworkInspect(ctx, resp.ID, network.InspectOptions{})
	if err != nil || len(info.IPAM.Config) == 0 {
		t.Fatalf("inspect %s: %v", name, err)
	}
	gw := netip.MustParseAddr(info.IPAM.Config[0].Gateway)
	ln, err := net.Listen("tcp", netip.AddrPortFrom(gw, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, name) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// TestDockerAllowlistThroughEgressProxy runs airlock with [network] mode = "allowlist" on the
// Docker backend: the container reaches the server the allowlist names through the proxy,
// not the one it does not name, and a CONNECT to the metadata address is refused by the
// proxy before any packet is sent; each refusal is a network_denied event in the ledger.
func TestDockerAllowlistThroughEgressProxy(t *testing.T) {
	t.Parallel()
	dir, prefix, cli := dockerSetup(t, "reuse_container = false")
	allowed := gatewayServer(t, prefix, "allowed-server")
	other := gatewayServer(t, prefix, "other-server")
	allowedHost, _, _ := net.SplitHostPort(allowed)
	cfgPath := filepath.Join(dir, "airlock.toml")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	writeConfig(t, dir, string(cfg)+fmt.Sprintf("[network]\nmode = \"allowlist\"\nallow_domains = [%q]\nallow_private = true\n[ledger]\npath = \"ledger/receipts.jsonl\"\n", allowedHost))

	// The command's HTTP_PROXY is a proxy port of its call's own; nc speaks the proxy
	// protocol by hand, as curl would.
	via := `p=${HTTP_PROXY#http://}; ph=${p%:*}; pp=${p##*:}; `
	get := func(target string) string {
		return fmt.Sprintf(`(printf 'GET http://%s/ HTTP/1.0\r\nHost: %s\r\n\r\n'; sleep 2) | nc -w 5 "$ph" "$pp"; echo`, target, target)
	}
	script := via + get(allowed) + "; echo ===; " + get(other) + "; echo ===; " +
		`(printf 'CONNECT 169.254.169.254:80 HTTP/1.1\r\nHost: 169.254.169.254:80\r\n\r\n'; sleep 2) | nc -w 5 "$ph" "$pp"`
	out, errOut, code := run(t, dir, "", nil, "exec", "--", script)
	if code != 0 {
		t.Fatalf("airlock exec exited %d: %s\n%s", code, out, errOut)
	}
	parts := strings.Split(out, "===")
	if len(parts) != 3 {
		t.Fatalf("output: %q", out)
	}
	if !strings.Contains(parts[0], " 200 ") || !strings.Contains(parts[0], "allowed-server") {
		t.Errorf("allowlisted server: %q", parts[0])
	}
	if !strings.Contains(parts[1], " 403 ") || !strings.Contains(parts[1], "not_allowlisted") || strings.Contains(parts[1], "other-server") {
		t.Errorf("server not on the allowlist: %q", parts[1])
	}
	if !strings.Contains(parts[2], " 403 ") || !strings.Contains(parts[2], "metadata") {
		t.Errorf("CONNECT to the metadata address: %q", parts[2])
	}
	ledger, err := os.ReadFile(filepath.Join(dir, "ledger", "receipts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	type ledgerLine struct {
		Event   string `json:"event"`
		Receipt struct {
			CallID   string `json:"call_id"`
			ToolName string `json:"tool_name"`
			Network  *struct {
				Host   string `json:"host"`
				Port   int    `json:"port"`
				Reason string `json:"reason"`
				By     string `json:"by"`
			} `json:"network"`
		} `json:"receipt"`
	}
	var denied []ledgerLine
	callID := ""
	for _, raw := range strings.Split(strings.TrimSpace(string(ledger)), "\n") {
		var l ledgerLine
		if err := json.Unmarshal([]byte(raw), &l); err != nil {
			t.Fatalf("ledger line %q: %v", raw, err)
		}
		switch {
		case l.Event == "network_denied" && l.Receipt.Network != nil:
			denied = append(denied, l)
		case l.Event == "completed" && l.Receipt.ToolName == "terminal":
			callID = l.Receipt.CallID
		}
	}
	if len(denied) != 2 || callID == "" {
		t.Fatalf("network_denied events %+v, terminal call %q", denied, callID)
	}
	if n := denied[0].Receipt.Network; n.Reason != "not_allowlisted" || n.By != "egress_proxy" {
		t.Errorf("first refusal: %+v", n)
	}
	if n := denied[1].Receipt.Network; n.Host != "169.254.169.254" || n.Port != 80 || n.Reason != "metadata" {
		t.Errorf("second refusal: %+v", n)
	}
	for _, d := range denied {
		if d.Receipt.CallID != callID {
			t.Errorf("refusal under call %q, want the terminal call %q", d.Receipt.CallID, callID)
		}
	}
	// The session's socket directory went away with it, and no internal network was made
	// (earlier versions put the container on one; now it has no network at all).
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"egress-*")); len(left) != 0 {
		t.Errorf("egress socket directories left behind: %q", left)
	}
	nets, err := cli.NetworkList(context.Background(), network.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nets {
		if strings.HasPrefix(n.Name, prefix+"net-") {
			t.Errorf("internal network %s left behind", n.Name)
		}
	}
}
