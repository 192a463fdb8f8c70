package shellrisk

import (
	"slices"
	"testing"
)

// TestContext checks the families that depend on the policy around a command (issue 11,
// family 11 and the deny_names of family 5): write roots narrower than the workspace, a
// root outside it, the configuration and the ledger in use whatever their names, the
// workspace given as an absolute path, and a URL guard's answer.
func TestContext(t *testing.T) {
	t.Parallel()
	cx := Context{
		Workspace:  "/home/u/proj",
		WriteRoots: []string{"src", "/data/out"},
		DenyNames:  []string{"*.secret", "private/keys"},
		Protected:  []string{"/home/u/.config/airlock/team.toml", "/home/u/proj/.state/audit.jsonl"},
		HostAllowed: func(h string) bool {
			return h == "example.com"
		},
	}
	tests := []struct {
		name    string
		command string
		risk    Risk
		code    string
	}{
		{"write in a root", "touch src/a.go", RiskWrite, "writes_files"},
		{"write outside the roots", "touch docs/a.md", RiskDangerous, "write_outside_roots"},
		{"redirect outside the roots", "echo x > notes.txt", RiskDangerous, "write_outside_roots"},
		{"delete outside the roots", "rm -rf build", RiskDangerous, "write_outside_roots"},
		{"sed -i outside the roots", "sed -i s/a/b/ README.md", RiskDangerous, "write_outside_roots"},
		{"absolute path into a root", "cp a.txt /home/u/proj/src/b.txt", RiskWrite, "writes_files"},
		{"absolute path outside the roots", "touch /home/u/proj/x", RiskDangerous, "write_outside_roots"},
		{"root outside the workspace", "cp src/a /data/out/a", RiskWrite, "writes_files"},
		{"outside every root", "cp src/a /data/other/a", RiskDangerous, "write_outside_workspace"},
		{"read is fine", "cat docs/a.md", RiskSafe, ""},
		{"deny name", "cat conf/db.secret", RiskDangerous, "credential_access"},
		{"deny name with a slash", "cat private/keys/k1", RiskDangerous, "credential_access"},
		{"config by path", "sed -i s/manual/auto/ /home/u/.config/airlock/team.toml", RiskDangerous, "airlock_state"},
		{"config by name", "cat ../../.config/airlock/team.toml", RiskDangerous, "airlock_state"},
		{"config named anywhere", "cp evil.toml team.toml", RiskDangerous, "airlock_state"},
		{"ledger reached by a recursive delete", "rm -rf .state", RiskDangerous, "airlock_state"},
		{"ledger reached by a glob", "rm .state/*", RiskDangerous, "airlock_state"},
		{"ledger by name", "truncate -s0 .state/audit.jsonl", RiskDangerous, "airlock_state"},
		{"host allowed", "curl https://example.com/x", RiskNetwork, "network_access"},
		{"host refused", "curl https://evil.example.net/x", RiskDangerous, "host_not_allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := ClassifyIn(cx, tc.command)
			if v.Risk != tc.risk || tc.code != "" && !slices.Contains(v.Codes(), tc.code) {
				t.Fatalf("%q: %s %v, want %s with %s", tc.command, v.Risk, v.Codes(), tc.risk, tc.code)
			}
		})
	}
	// Without a context the same commands are judged as before.
	if v := Classify("touch docs/a.md"); v.Risk != RiskWrite {
		t.Errorf("no context: %s %v", v.Risk, v.Codes())
	}
}
