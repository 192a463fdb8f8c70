package configs

import (
	"strings"
	"testing"
)

func TestMetricsSection(t *testing.T) {
	t.Parallel()
	if d := Default(); d.Metrics.Listen != "" {
		t.Fatalf("default [metrics] listen = %q, want off", d.Metrics.Listen)
	}
	for _, ok := range []string{
		"[metrics]\nlisten = \"127.0.0.1:9464\"",
		"[metrics]\nlisten = \"[::1]:9464\"\npath = \"/m\"",
		"[metrics]\nlisten = \"localhost:0\"",
		"[metrics]\nlisten = \"0.0.0.0:9464\"\nallow_non_loopback = true",
	} {
		cfg, err := Parse([]byte(ok), t.TempDir())
		if err != nil {
			t.Errorf("Parse(%q): %v", ok, err)
		} else if cfg.Metrics.Listen == "" {
			t.Errorf("Parse(%q): listen lost", ok)
		}
	}
	for _, tc := range []struct{ toml, want string }{
		{"[metrics]\nlisten = \"0.0.0.0:9464\"", "metrics.listen: \"0.0.0.0:9464\" is every interface"},
		{"[metrics]\nlisten = \"192.0.2.1:9464\"", "metrics.listen: \"192.0.2.1:9464\" is a non-loopback address"},
		{"[metrics]\nlisten = \"9464\"", "metrics.listen"},
		{"[metrics]\nlisten = \"127.0.0.1:http\"", "metrics.listen"},
		{"[metrics]\nlisten = \"example.com:9464\"", "metrics.listen"},
		{"[metrics]\nlisten = 9464", "metrics.listen"},
		{"[metrics]\npath = \"metrics\"", "metrics.path"},
		{"[metrics]\nport = 9464", "metrics.port"},
	} {
		_, err := Parse([]byte(tc.toml), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) error = %v, want it to name %s", tc.toml, err, tc.want)
		}
	}
}
