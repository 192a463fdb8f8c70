package docker_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
)

// TestRecordDerivesNetwork: [network] reaches a Docker section through the record's Derive,
// the only way the runtime has to say it.
func TestRecordDerivesNetwork(t *testing.T) {
	t.Parallel()
	r, ok := backend.Lookup("docker")
	if !ok || r.Derive == nil {
		t.Fatal("docker record without Derive")
	}
	proxy := func(context.Context, netip.Addr) (backend.Egress, error) { return backend.Egress{}, nil }
	for _, tc := range []struct {
		name      string
		net       backend.NetworkPolicy
		network   string
		reuse     bool
		options   int
		wantError bool
	}{
		{"none keeps no network", backend.NetworkPolicy{Mode: backend.NetworkNone}, "none", true, 0, false},
		{"open uses the bridge", backend.NetworkPolicy{Mode: backend.NetworkOpen}, "bridge", true, 0, false},
		{"allowlist gets the proxy, no reuse", backend.NetworkPolicy{Mode: backend.NetworkAllowlist, Proxy: proxy}, "none", false, 1, false},
		{"allowlist without a proxy is refused", backend.NetworkPolicy{Mode: backend.NetworkAllowlist}, "none", true, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sec := r.NewConfig().(*docker.Config)
			sec.Network, sec.ReuseContainer = "none", true
			opts, err := r.Derive(sec, backend.Policy{Network: tc.net})
			if (err != nil) != tc.wantError {
				t.Fatalf("err = %v, want error %v", err, tc.wantError)
			}
			if sec.Network != tc.network || sec.ReuseContainer != tc.reuse || len(opts) != tc.options {
				t.Errorf("network %q reuse %v options %d; want %q %v %d", sec.Network, sec.ReuseContainer, len(opts), tc.network, tc.reuse, tc.options)
			}
			for _, o := range opts {
				if _, ok := o.(docker.Option); !ok {
					t.Errorf("option %T is not a docker.Option", o)
				}
			}
		})
	}
}
