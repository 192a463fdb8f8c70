package sandbox

import (
	"reflect"
	"strings"
	"testing"
)

// TestPlanNamespace: what the helper's filesystem masks, binds read-only, pins and binds
// back, for a workspace whose root holds the configuration, the ledger, .env and a
// repository. A read-only root's .env is masked too; its repository is not pinned (it is
// read-only already).
func TestPlanNamespace(t *testing.T) {
	fs := newFakeFS(
		"/home/ann/.ssh/id_ed25519", "/home/ann/.cargo/credentials.toml", "/home/ann/go/",
		"/etc/shadow", "/etc/passwd", "/etc/resolv.conf -> /run/systemd/resolve/stub-resolv.conf",
		"/run/systemd/resolve/stub-resolv.conf", "/run/docker.sock", "/tmp/other-session/secret",
		"/work/app/.env", "/work/app/airlock.toml", "/work/app/receipts.jsonl", "/work/app/src/main.go",
		"/work/app/src/.env.local", "/work/app/.git/config", "/work/app/.git/hooks/", "/work/app/.git/HEAD",
		"/work/app/vendor/lib/.git", "/work/app/secrets/", "/work/app/secrets/in/", "/tmp/airlock-session-1/",
		"/tmp/ro-root/", "/work/app/.ssh/", "/tmp/ro-root/.env", "/tmp/ro-root/repo/.git/hooks/",
	)
	p := Policy{
		ReadRoots:  []string{"/work/app", "/tmp/ro-root"},
		WriteRoots: []string{"/work/app", "/work/app/secrets/in"},
		TempDir:    "/tmp/airlock-session-1",
		Home:       "/home/ann",
		Protected:  []string{"/work/app/airlock.toml", "/work/app/receipts.jsonl", "/work/app/secrets"},
		Hidden:     func(rel string) bool { return strings.HasPrefix(path0(rel), ".env") || rel == ".ssh" },
	}
	n := planNamespace(p, fs)
	for _, tc := range []struct {
		name      string
		got, want []string
	}{
		{"write roots", n.WriteRoots, []string{"/tmp/airlock-session-1", "/work/app"}},
		{"read roots under a cover", n.ReadRoots, []string{"/run/systemd/resolve/stub-resolv.conf", "/tmp/ro-root"}},
		{"covers", n.Covers, []string{"/run", "/tmp"}},
		{"masks", n.Masks, []string{"/etc/shadow", "/home/ann/.cargo/credentials.toml", "/home/ann/.ssh", "/tmp/ro-root/.env", "/work/app/.env", "/work/app/.ssh", "/work/app/airlock.toml",
			"/work/app/receipts.jsonl", "/work/app/secrets", "/work/app/src/.env.local"}},
		{"pins", n.Pins, []string{"/work/app/.git"}},
		{"read-only", n.ReadOnly, []string{"/work/app/.git/config", "/work/app/.git/hooks", "/work/app/vendor/lib/.git"}},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	if !n.MaskDirs["/work/app/secrets"] || n.MaskDirs["/work/app/.env"] {
		t.Errorf("mask kinds %v", n.MaskDirs)
	}
	if !strings.Contains(strings.Join(n.Notes, " "), "/work/app/secrets/in is not bound") {
		t.Errorf("a write root inside a protected path was bound: %q", n.Notes)
	}
}

func path0(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[i+1:]
	}
	return rel
}

func TestCovered(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{"/tmp": true, "/tmp/x/y": true, "/run/user": true, "/usr/bin": false, "/bin": false, "/tmpfoo": false, "/": false} {
		if got := Covered(p); got != want {
			t.Errorf("Covered(%q) = %v, want %v", p, got, want)
		}
	}
}
