package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/backend/sandbox"
)

// TestRefusalsSayWhy: a command the namespace sandbox refused something says, in its
// result's notes, which rule refused it and what to do — for a protected file (masked), a
// file git runs code from (read-only), and a write outside the write roots (the host's files
// read-only). A command that failed for its own reasons gets no such note.
func TestRefusalsSayWhy(t *testing.T) {
	requireNamespaces(t)
	env, ws := protectedWorkspaceWithRepo(t)
	tests := []struct {
		name, cmd string
		want      []string // in one note, or none when empty
	}{
		{"protected file", "cat airlock.toml", []string{filepath.Join(ws, "airlock.toml") + " is protected", "ask the person"}},
		{"repository hook", "echo marker >> .git/hooks/pre-commit", []string{"a file git runs code from", "ask the person"}},
		{"host file", "touch /usr/airlock-explain-marker", []string{"the host's files are read-only", "write inside the workspace"}},
		{"own failure", "echo 'no such thing' >&2; exit 3", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := sh(t, env, tc.cmd, nil)
			if res.ExitCode == 0 {
				t.Fatalf("%s succeeded: %s", tc.cmd, res.Stdout)
			}
			var why string
			for _, n := range res.Notes {
				if strings.HasPrefix(n, backend.RefusedNote) {
					why = n
				}
			}
			if tc.want == nil {
				if why != "" {
					t.Fatalf("a failure of the command's own is explained as the sandbox's: %q", why)
				}
				return
			}
			for _, w := range tc.want {
				if !strings.Contains(why, w) {
					t.Fatalf("notes %q: none says %q (stderr %q)", res.Notes, w, res.Stderr)
				}
			}
		})
	}
}

// protectedWorkspaceWithRepo is a workspace in namespace mode whose root holds the
// configuration (protected) and a repository with its hooks directory.
func protectedWorkspaceWithRepo(t *testing.T) (*local.Env, string) {
	t.Helper()
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"airlock.toml": "# marker-config\n", ".git/config": "[core]\n", ".git/HEAD": "ref: refs/heads/main\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env, err := local.New(local.Config{Workspace: ws, Sandbox: local.SandboxConfig{
		Mode: sandbox.ModeNamespaces, Protected: []string{filepath.Join(ws, "airlock.toml")},
	}})
	if err != nil {
		t.Fatalf("local.New: %v", err)
	}
	t.Cleanup(func() { _ = env.Close(context.Background()) })
	return env, ws
}
