package clienttest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func clientBin(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(npmDir(), "clients", "node_modules", ".bin", name)
	need(t, name, bin)
	return bin
}

// runIn runs a command with a throwaway HOME (and CODEX_HOME) in dir.
func runIn(t *testing.T, dir, home string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "CODEX_HOME="+filepath.Join(home, ".codex"), "AIRLOCK_CONFIG=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Claude Code accepts what `airlock install claude-code` writes and connects to the server.
func TestClaudeCodeConnects(t *testing.T) {
	t.Parallel()
	claude := clientBin(t, "claude")
	for _, scope := range []string{"--user", "--project"} {
		t.Run(scope, func(t *testing.T) {
			p := newProject(t, "")
			home := t.TempDir()
			if scope == "--project" {
				// A project's .mcp.json servers start once the person trusted the folder in
				// Claude Code: what they do once by hand, written here.
				trust := `{"projects": {"` + p.dir + `": {"hasTrustDialogAccepted": true}}}`
				if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte(trust), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			runIn(t, p.dir, home, airlockBin, "install", "claude-code", scope, "--config", p.config)
			out := runIn(t, p.dir, home, claude, "mcp", "list")
			if !strings.Contains(out, "airlock: "+airlockBin+" mcp --config "+p.config+" - ✔ Connected") {
				t.Fatalf("claude mcp list:\n%s", out)
			}
		})
	}
}

// Codex accepts what `airlock install codex` writes and lists the server enabled, with its
// own shell tool off.
func TestCodexListsItEnabled(t *testing.T) {
	t.Parallel()
	codex := clientBin(t, "codex")
	p := newProject(t, "")
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte("# mine\n[mcp_servers.other]\ncommand = \"other\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runIn(t, p.dir, home, airlockBin, "install", "codex", "--config", p.config)
	out := runIn(t, p.dir, home, codex, "mcp", "list")
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "airlock ") {
			line = l
		}
	}
	if !strings.Contains(line, airlockBin) || !strings.Contains(line, "enabled") || !strings.Contains(out, "other") {
		t.Fatalf("codex mcp list:\n%s", out)
	}
	feats := runIn(t, p.dir, home, codex, "features", "list")
	for _, l := range strings.Split(feats, "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "shell_tool" && f[2] != "false" {
			t.Fatalf("codex shell_tool still on: %q", l)
		}
	}
}
