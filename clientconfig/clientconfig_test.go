package clientconfig

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func render(t *testing.T, tg Target) string {
	t.Helper()
	changes, notes, err := Plan(tg)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range changes {
		b.WriteString("# " + c.Path + "\n")
		b.Write(c.Content)
		b.WriteString("\n")
	}
	for _, n := range notes {
		b.WriteString("# note: " + n + "\n")
	}
	return b.String()
}

// What a fresh install writes, for every client and scope.
func TestGolden(t *testing.T) {
	t.Parallel()
	for _, client := range Clients {
		for _, scope := range []string{Project, User} {
			t.Run(client+"-"+scope, func(t *testing.T) {
				t.Parallel()
				got := render(t, Target{Client: client, Scope: scope, Home: "/nonexistent/home", ProjectDir: "/nonexistent/proj",
					Command: "/usr/local/bin/airlock", Args: []string{"mcp", "--config", "/nonexistent/proj/airlock.toml"}})
				path := filepath.Join("testdata", client+"-"+scope+".golden")
				if *update {
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if got != string(want) {
					t.Fatalf("got\n%s\nwant\n%s", got, want)
				}
			})
		}
	}
}

// Writing into existing settings keeps every entry of the user's.
func TestMergeKeepsUserEntries(t *testing.T) {
	t.Parallel()
	proj := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(proj, ".claude"), 0o755))
	must(os.WriteFile(filepath.Join(proj, ".mcp.json"), []byte(`{"mcpServers": {"db": {"command": "dbserver"}, "airlock": {"command": "old"}}, "x": 1}`), 0o644))
	must(os.WriteFile(filepath.Join(proj, ".claude", "settings.json"), []byte(`{"model": "opus", "permissions": {"allow": ["Read"], "deny": ["Bash", "WebFetch"]}}`), 0o600))
	// The installed client's tools as a probe found them: deny rules only for those it has.
	tg := Target{Client: ClaudeCode, ProjectDir: proj, Home: t.TempDir(), Command: "/bin/airlock", Args: []string{"mcp"},
		ClientTools: []string{"Agent", "Bash", "Edit", "Read", "WebFetch", "Write", "mcp__db__query", "LS"}}
	changes, _, err := Plan(tg)
	must(err)
	must(Apply(changes))

	var servers struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
		X          int                       `json:"x"`
	}
	readJSON(t, filepath.Join(proj, ".mcp.json"), &servers)
	if servers.MCPServers["db"]["command"] != "dbserver" || servers.MCPServers["airlock"]["command"] != "/bin/airlock" || servers.X != 1 {
		t.Fatalf("servers %+v", servers)
	}
	var settings struct {
		Model       string `json:"model"`
		Permissions struct {
			Allow []string `json:"allow"`
			Deny  []string `json:"deny"`
		} `json:"permissions"`
	}
	readJSON(t, filepath.Join(proj, ".claude", "settings.json"), &settings)
	if settings.Model != "opus" || strings.Join(settings.Permissions.Allow, ",") != "Read,mcp__airlock__*" ||
		strings.Join(settings.Permissions.Deny, ",") != "Bash,WebFetch,Read,Write,Edit,NotebookEdit,Grep,Glob,LS,WebSearch" {
		t.Fatalf("settings %+v", settings)
	}
	if fi, err := os.Stat(filepath.Join(proj, ".claude", "settings.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode not kept: %v %v", fi.Mode(), err)
	}
	// A second install changes nothing more.
	again, _, err := Plan(tg)
	must(err)
	for _, c := range again {
		old, _ := os.ReadFile(c.Path)
		if string(old) != string(c.Content) {
			t.Fatalf("second install changes %s", c.Path)
		}
	}

	// Codex: comments, other servers and other features stay; an old airlock table goes.
	home := t.TempDir()
	must(os.MkdirAll(filepath.Join(home, ".codex"), 0o755))
	old := "# mine\nmodel = \"o3\"\n\n[features]\nweb_search = true\nshell_tool = true\n\n[mcp_servers.airlock]\ncommand = \"stale\"\n[mcp_servers.airlock.env]\nA = \"1\"\n\n[mcp_servers.other]\ncommand = \"other\"\n"
	must(os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(old), 0o644))
	changes, _, err = Plan(Target{Client: Codex, Home: home, Command: "/bin/airlock", Args: []string{"mcp"}})
	must(err)
	must(Apply(changes))
	b, _ := os.ReadFile(filepath.Join(home, ".codex", "config.toml"))
	var cfg map[string]any
	if _, err := toml.Decode(string(b), &cfg); err != nil {
		t.Fatal(err)
	}
	feats := cfg["features"].(map[string]any)
	srv := cfg["mcp_servers"].(map[string]any)
	if !strings.HasPrefix(string(b), "# mine\n") || cfg["model"] != "o3" || feats["web_search"] != true || feats["shell_tool"] != false ||
		srv["other"] == nil || srv["airlock"].(map[string]any)["command"] != "/bin/airlock" || srv["airlock"].(map[string]any)["env"] != nil {
		t.Fatalf("codex config:\n%s", b)
	}
}

// A file Airlock cannot read as settings is never overwritten.
func TestBrokenFileIsLeftAlone(t *testing.T) {
	t.Parallel()
	proj := t.TempDir()
	if err := os.WriteFile(filepath.Join(proj, ".mcp.json"), []byte(`{"mcpServers": `), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Plan(Target{Client: ClaudeCode, ProjectDir: proj, Home: proj, Command: "/bin/airlock"}); err == nil {
		t.Fatal("planned over a broken file")
	}
	home := t.TempDir()
	_ = os.MkdirAll(filepath.Join(home, ".codex"), 0o755)
	_ = os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte("[mcp_servers\n"), 0o644)
	if _, _, err := Plan(Target{Client: Codex, Home: home, Command: "/bin/airlock"}); err == nil {
		t.Fatal("planned over broken TOML")
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// AGENTS.md keeps the user's text; Airlock's block is replaced between its markers, so a
// second install changes nothing.
func TestCodexAgentsMDKeepsTheUsersText(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "AGENTS.md")
	if err := os.WriteFile(path, []byte("# House rules\nUse tabs."), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := codexAgentsMD(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "# House rules\nUse tabs.\n\n" + agentsBlock; string(c.Content) != want {
		t.Fatalf("got %q, want %q", c.Content, want)
	}
	if err := Apply([]Change{c}); err != nil {
		t.Fatal(err)
	}
	again, err := codexAgentsMD(path)
	if err != nil || string(again.Content) != string(c.Content) {
		t.Fatalf("second install changes AGENTS.md: %q %v", again.Content, err)
	}
}
