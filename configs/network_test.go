package configs

import (
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/urlguard"
)

func TestNetworkSection(t *testing.T) {
	t.Parallel()
	if d := Default(); d.Network.Mode != urlguard.ModeNone || d.Network.AllowPrivate {
		t.Fatalf("default [network] = %+v, want mode none without private addresses", d.Network)
	}
	cfg, err := Parse([]byte(`
[network]
mode = "allowlist"
allow_domains = ["example.com", "*.example.org"]
deny_domains = ["bad.example.org"]
allow_private = true
`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	n := cfg.Network
	if n.Mode != urlguard.ModeAllowlist || len(n.AllowDomains) != 2 || len(n.DenyDomains) != 1 || !n.AllowPrivate {
		t.Fatalf("parsed [network] = %+v", n)
	}
	for _, tc := range []struct{ toml, want string }{
		{"[network]\nmode = \"closed\"", "network.mode"},
		{"[network]\nallow_domain = []", "network.allow_domain"},
		{"[network]\nallow_domains = [\"a*b.example\"]", "allow_domains[0]"},
		{"[network]\ndeny_domains = [\"\"]", "network.deny_domains"},
	} {
		_, err := Parse([]byte(tc.toml), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) error = %v, want it to name %s", tc.toml, err, tc.want)
		}
	}
}
