package configs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseErrorsNameTheKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, toml string
		want       []string
	}{
		{"unknown top-level key", "colour = 1", []string{"colour: unknown property"}},
		{"unknown nested key", "[environment]\ntimout = 3", []string{"environment.timout: unknown property"}},
		{"wrong type", "[environment]\ntype = 3", []string{"environment.type:"}},
		{"bad enum", "[environment]\ntype = \"kvm\"", []string{"environment.type: value must be one of"}},
		{"bad duration", "[environment]\ntimeout = \"soon\"", []string{"environment.timeout"}},
		{"ledger flag type", "[ledger]\nstore_arguments = \"yes\"", []string{"ledger.store_arguments: expected boolean"}},
		{"zero timeout", "[environment]\ntimeout = 0", []string{"environment.timeout: must be greater than 0"}},
		{"secret passthrough", "[environment]\nenv_passthrough = [\"GITHUB_TOKEN\"]", []string{"environment.env_passthrough", "looks like a secret"}},
		{"not toml", "[environment", []string{"not valid TOML"}},
		{"warm pool too big", "[environment]\ntype = \"docker\"\n[environment.docker]\nimage = \"i\"\nreuse_container = false\nwarm_pool = 65", []string{"environment.docker.warm_pool"}},
		{"warm pool with a reused container", "[environment]\ntype = \"docker\"\n[environment.docker]\nimage = \"i\"\nwarm_pool = 2",
			[]string{"environment.docker.warm_pool = 2 needs environment.docker.reuse_container = false"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.toml), "/tmp")
			if err == nil {
				t.Fatal("no error")
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not *configs.Error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestParseValid(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`
[environment]
type = "local"
workspace = "ws"
timeout = 30
env_passthrough = ["LANG", "LC_*"]
kill_grace = "250ms"
[ledger]
path = "r.jsonl"
store_arguments = true
[approvals]
mode = "auto"
max_tool_workers = 3
never_parallel = ["deploy"]
`), "/base")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Environment.Timeout.D() != 30*time.Second || cfg.Environment.KillGrace.D() != 250*time.Millisecond {
		t.Errorf("durations: %v %v", cfg.Environment.Timeout.D(), cfg.Environment.KillGrace.D())
	}
	if cfg.WorkspaceDir() != "/base/ws" || cfg.LedgerPath() != "/base/r.jsonl" || !cfg.Ledger.StoreArguments {
		t.Errorf("paths: %q %q", cfg.WorkspaceDir(), cfg.LedgerPath())
	}
	if a := cfg.Approvals; a.Mode != "auto" || a.MaxToolWorkers != 3 || len(a.NeverParallel) != 1 || !a.AllowWrite {
		t.Errorf("approvals: %+v", a)
	}
	// Keys not given keep their defaults.
	if cfg.Environment.MaxOutputBytes != Default().Environment.MaxOutputBytes {
		t.Errorf("default lost: %d", cfg.Environment.MaxOutputBytes)
	}
}

// TestExamples loads every example config shipped in this directory.
func TestExamples(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("examples/*.toml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no example configs")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Parse(data, t.TempDir()); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		})
	}
}

func TestLoadDefaultsWithoutFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	cfg, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Environment.Type != "local" || cfg.WorkspaceDir() != filepath.Join(dir, ".") && cfg.WorkspaceDir() != dir {
		t.Errorf("defaults: %+v", cfg.Environment)
	}
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	// The default ledger and sessions live outside the workspace, keyed by it.
	if l := cfg.LedgerPath(); !strings.HasPrefix(l, filepath.Join(state, "airlock")+"/") || strings.HasPrefix(l, dir) || filepath.Base(l) != "receipts.jsonl" {
		t.Errorf("ledger: %q", l)
	}
	if filepath.Dir(cfg.SessionsDir()) != filepath.Dir(cfg.LedgerPath()) {
		t.Errorf("sessions: %q", cfg.SessionsDir())
	}
	other := StateDirFor(state, t.TempDir())
	if other == cfg.StateDir() {
		t.Errorf("two workspaces share a state dir: %q", other)
	}
}

func TestEnvPassthroughWildcardRefused(t *testing.T) {
	for _, p := range []string{"*", "?*", "**"} {
		_, err := Parse([]byte("[environment]\nenv_passthrough = [\"PATH\", \""+p+"\"]\n"), t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "environment.env_passthrough") || !strings.Contains(err.Error(), "matches every variable") {
			t.Errorf("%q: %v", p, err)
		}
	}
	if _, err := Parse([]byte("[environment]\nenv_passthrough = [\"LC_*\"]\n[environment.local]\nsandbox = \"landlock\"\n"), t.TempDir()); err != nil {
		t.Errorf("narrow glob: %v", err)
	}
	if _, err := Parse([]byte("[environment.local]\nsandbox = \"maybe\"\n"), t.TempDir()); err == nil || !strings.Contains(err.Error(), "sandbox") {
		t.Errorf("bad sandbox mode: %v", err)
	}
}
