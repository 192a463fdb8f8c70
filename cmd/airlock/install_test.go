package main

import (
	"errors"
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

// probeTools asks again while the client offers none of Airlock's tools (its MCP server
// was not up yet), three times at most, and stops at the first answer that has them.
func TestProbeToolsAsksAgain(t *testing.T) {
	answers := [][]string{{"Read"}, {"Read"}, {"Read", "mcp__airlock__terminal"}, {"never asked"}}
	calls := 0
	probe := func() ([]string, error) { calls++; return answers[calls-1], nil }
	tools, err := probeTools("mcp__airlock__", probe)
	if err != nil || calls != 3 || len(tools) != 2 {
		t.Fatalf("tools %q, err %v after %d probes; want the third answer", tools, err, calls)
	}
	calls = 0
	answers = [][]string{{"Read"}, {"Read"}, {"Bash"}, {"mcp__airlock__terminal"}}
	if tools, _ := probeTools("mcp__airlock__", probe); calls != 3 || tools[0] != "Bash" {
		t.Fatalf("tools %q after %d probes; want the third answer after three", tools, calls)
	}
	boom := errors.New("no model request")
	if _, err := probeTools("mcp__airlock__", func() ([]string, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("err %v, want the probe's", err)
	}
}
