package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/configs"
)

// Without --config and with no ./airlock.toml, install points the client at a config it
// writes outside the workspace (in the project's state directory, beside the default
// ledger), with the project as the workspace; a second install keeps it as it is.
func TestInstallWritesTheConfigOutsideTheWorkspace(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", filepath.Join(root, "home"))
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("AIRLOCK_CONFIG", "")
	t.Chdir(proj)
	code, out, errOut := runCmd(t, "", "install", "gemini-cli", "--command", "/usr/local/bin/airlock")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	want := filepath.Join(configs.StateDirFor("", proj), "airlock.toml")
	if !strings.Contains(out, "created "+want) {
		t.Fatalf("install did not create %s:\n%s", want, out)
	}
	if rel, _ := filepath.Rel(proj, want); !strings.HasPrefix(rel, "..") {
		t.Fatalf("config %s lies inside the workspace", want)
	}
	cfg, err := configs.Load(want)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.WorkspaceDir() != proj {
		t.Fatalf("workspace %s, want %s", cfg.WorkspaceDir(), proj)
	}
	settings, err := os.ReadFile(filepath.Join(proj, ".gemini", "settings.json"))
	if err != nil || !strings.Contains(string(settings), want) {
		t.Fatalf("client not pointed at %s: %s %v", want, settings, err)
	}
	if err := os.WriteFile(want, []byte("[environment]\ntype = \"local\"\nworkspace = \""+proj+"\"\n# mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCmd(t, "", "install", "gemini-cli", "--command", "/usr/local/bin/airlock"); code != 0 || strings.Contains(out, "created "+want) {
		t.Fatalf("second install: exit %d: %s %s", code, out, errOut)
	}
	if b, _ := os.ReadFile(want); !strings.Contains(string(b), "# mine") {
		t.Fatalf("second install rewrote the config: %s", b)
	}
}
