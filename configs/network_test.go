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

func TestNetworkModeAndDockerNetworkAgree(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		toml string
		ok   bool
	}{
		{"[environment]\ntype = \"docker\"\n[environment.docker]\nnetwork = \"bridge\"\n", false},
		{"[environment]\ntype = \"docker\"\n[environment.docker]\nnetwork = \"bridge\"\n[network]\nmode = \"open\"\n", true},
		{"[environment]\ntype = \"docker\"\n[environment.docker]\nnetwork = \"bridge\"\n[network]\nmode = \"allowlist\"\n", false},
		{"[environment]\ntype = \"docker\"\n[network]\nmode = \"allowlist\"\nallow_domains = [\"example.com\"]\n", true},
		{"[environment]\ntype = \"docker\"\n[network]\nmode = \"open\"\n", true},
	} {
		_, err := Parse([]byte(tc.toml), t.TempDir())
		if (err == nil) != tc.ok {
			t.Errorf("Parse(%q) error = %v, want ok=%v", tc.toml, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "environment.docker.network") {
			t.Errorf("error %v does not name environment.docker.network", err)
		}
	}
}
