package kubernetes_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/kubernetes"
	"github.com/airlock-dev/airlock/egress/egresstest"
	"github.com/airlock-dev/airlock/urlguard"
)

// TestNetworkAllowlistThroughHelper: in [network] mode allowlist the pod's NetworkPolicy
// denies all egress, as in mode none, and a command's request through its proxy variables
// reaches an allowed host through the helper's exec stream and Airlock's egress proxy — a
// server on the host's loopback, which nothing in the cluster can reach otherwise; a host
// off the list is refused, and the refusal names the call. (The test cluster's bridge
// plugin does not enforce NetworkPolicy, so enforcement is assumed here; TestNetworkNoneDetect
// shows the detection that refuses such a cluster by default.)
func TestNetworkAllowlistThroughHelper(t *testing.T) {
	cs, ns := client(t)
	port := egresstest.Server(t, "allowed-body")
	p := egresstest.Start(t, []string{"allowed.test"}, egresstest.Names{"allowed.test": "127.0.0.1", "other.test": "127.0.0.1"})
	var listened netip.Addr
	start := func(_ context.Context, ip netip.Addr) (backend.Egress, error) {
		listened = ip
		return backend.Egress{URL: p.URL(), Stop: func() error { return nil }, ServeCall: p.ServeCall}, nil
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
	if err != nil || res.ExitCode != 0 || string(res.Stdout) != "allowed-body" {
		t.Fatalf("allowed host through the helper: %v exit %d %q %q", err, res.ExitCode, res.Stdout, res.Stderr)
	}
	res, err = env.Exec(call, backend.Request{Command: fmt.Sprintf(`wget -q -O - http://other.test:%s/y`, port)})
	if err != nil || res.ExitCode == 0 || strings.Contains(string(res.Stdout), "allowed-body") {
		t.Fatalf("host off the list: %v exit %d %q %q", err, res.ExitCode, res.Stdout, res.Stderr)
	}
	got := p.Denials.List()
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
