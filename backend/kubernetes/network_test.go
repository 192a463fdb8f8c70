package kubernetes_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/kubernetes"
	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/urlguard"
)

// names resolves the test's host names to the host's loopback.
type names map[string]string

func (n names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := n[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, errors.New("no such host")
}

// TestNetworkAllowlistThroughHelper: in [network] mode allowlist the pod's NetworkPolicy
// denies all egress, as in mode none, and a command's request through its proxy variables
// reaches an allowed host through the helper's exec stream and Airlock's egress proxy — a
// server on the host's loopback, which nothing in the cluster can reach otherwise; a host
// off the list is refused, and the refusal names the call. (The test cluster's bridge
// plugin does not enforce NetworkPolicy, so enforcement is assumed here; TestNetworkNoneDetect
// shows the detection that refuses such a cluster by default.)
func TestNetworkAllowlistThroughHelper(t *testing.T) {
	cs, ns := client(t)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "allowed-body "+r.URL.Path)
	}))
	defer up.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(up.URL, "http://"))
	g, err := urlguard.New(urlguard.Config{Mode: urlguard.ModeAllowlist, AllowDomains: []string{"allowed.test"}},
		urlguard.WithResolver(names{"allowed.test": "127.0.0.1", "other.test": "127.0.0.1"}), urlguard.AllowLoopbackForTesting())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var denials []egress.Denial
	var listened netip.Addr
	start := func(_ context.Context, ip netip.Addr) (backend.Egress, error) {
		listened = ip
		p, err := egress.New(g, egress.WithOnDenied(func(d egress.Denial) { mu.Lock(); denials = append(denials, d); mu.Unlock() }))
		if err != nil {
			return backend.Egress{}, err
		}
		ln, err := net.Listen("tcp", netip.AddrPortFrom(ip, 0).String())
		if err != nil {
			return backend.Egress{}, err
		}
		go p.Serve(ln)
		return backend.Egress{URL: "http://" + ln.Addr().String(), Stop: p.Close, ServeCall: p.ServeCall}, nil
	}
	cfg := testConfig(t)
	cfg.Network, cfg.NetworkPolicyEnforcement = backend.NetworkAllowlist, kubernetes.EnforceAssume
	env := newEnv(t, cfg, kubernetes.WithEgressProxy(start))
	if !listened.IsLoopback() {
		t.Fatalf("the proxy listened on %v, want the host's loopback", listened)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	np, err := cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, env.PodName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	denies := false
	for _, pt := range np.Spec.PolicyTypes {
		denies = denies || pt == networkingv1.PolicyTypeEgress && len(np.Spec.Egress) == 0
	}
	if !denies {
		t.Fatalf("NetworkPolicy %s does not deny all egress: %+v", np.Name, np.Spec)
	}

	call := backend.WithCall(ctx, "call-k8s-allow")
	res, err := env.Exec(call, backend.Request{Command: fmt.Sprintf(`wget -q -O - http://allowed.test:%s/x`, port)})
	if err != nil || res.ExitCode != 0 || string(res.Stdout) != "allowed-body /x" {
		t.Fatalf("allowed host through the helper: %v exit %d %q %q", err, res.ExitCode, res.Stdout, res.Stderr)
	}
	res, err = env.Exec(call, backend.Request{Command: fmt.Sprintf(`wget -q -O - http://other.test:%s/y`, port)})
	if err != nil || res.ExitCode == 0 || strings.Contains(string(res.Stdout), "allowed-body") {
		t.Fatalf("host off the list: %v exit %d %q %q", err, res.ExitCode, res.Stdout, res.Stderr)
	}
	mu.Lock()
	got := append([]egress.Denial(nil), denials...)
	mu.Unlock()
	if len(got) != 1 || got[0].CallID != "call-k8s-allow" || got[0].Host != "other.test" || got[0].Reason != urlguard.NotAllowlisted {
		t.Fatalf("denials %+v, want one of other.test for call-k8s-allow", got)
	}
	// Every command's proxy is the helper's port on the pod's own loopback.
	if out := sh(t, env, `echo "$HTTP_PROXY $https_proxy [$NO_PROXY]"`); !strings.HasPrefix(out, "http://127.0.0.1:") || !strings.HasSuffix(out, " []") {
		t.Errorf("proxy variables in the pod: %q", out)
	}
	d := env.Describe()
	if d.Capabilities.NetworkIsolation || !strings.Contains(strings.Join(d.Notes, "\n"), "egress proxy") {
		t.Errorf("Describe: isolation %v, notes %q", d.Capabilities.NetworkIsolation, d.Notes)
	}
}
