package pathpolicy_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/tool"
)

// world is a workspace at <tmp>/ws with <tmp>/outside beside it.
func world(t *testing.T) (*local.Env, string) {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"ws/src", "ws/real", "outside"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{"ws/src/a.go": "package a\n", "ws/big.txt": strings.Repeat("x\n", 600), "outside/s.txt": "secret"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"ws/out": "../outside", "ws/alias": "real", "ws/loop": "loop"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	// The test's whole directory is a read root of the environment, as the runtime makes
	// the policy's roots: the helper sees it where commands run.
	env, err := local.New(local.Config{Workspace: filepath.Join(dir, "ws"), Sandbox: local.SandboxConfig{
		ReadRoots: []string{dir}, WriteRoots: []string{filepath.Join(dir, "ws")}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Close(context.Background()) })
	return env, env.Workspace()
}

func request(env *local.Env, name string, args map[string]any, refs ...tool.PathRef) *pipeline.Request {
	raw, _ := json.Marshal(args)
	return &pipeline.Request{
		Call: pipeline.Call{ID: "c", Name: name, Arguments: raw},
		Tool: &tool.Tool{Definition: tool.Definition{Name: name}}, Args: raw, PathRefs: refs, Env: env,
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	env, ws := world(t)
	pol, err := pathpolicy.New(pathpolicy.Config{MaxReadBytes: 1000, MaxWriteBytes: 10, AllowedTools: []string{"read_file", "write_file"}},
		pathpolicy.WithProtectedFiles(".airlock/receipts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	rd := func(p string) tool.PathRef { return tool.PathRef{Arg: "path", Path: p, Access: tool.Read} }
	wr := func(p string) tool.PathRef { return tool.PathRef{Arg: "path", Path: p, Access: tool.Write} }
	tests := []struct {
		name     string
		tool     string
		args     map[string]any
		ref      tool.PathRef
		code     string
		resolved string
		exists   bool
	}{
		{"read", "read_file", nil, rd("src/a.go"), pathpolicy.CodeAllowed, ws + "/src/a.go", true},
		{"missing is allowed", "read_file", nil, rd("src/nope.go"), pathpolicy.CodeAllowed, ws + "/src/nope.go", false},
		{"through dir link", "write_file", map[string]any{"content": "x"}, wr("alias/new.go"), pathpolicy.CodeAllowed, ws + "/real/new.go", false},
		{"link out", "read_file", nil, rd("out/s.txt"), pathpolicy.CodeSymlinkEscape, ws + "/out/s.txt", false},
		{"dotdot", "read_file", nil, rd("../outside/s.txt"), pathpolicy.CodeOutsideRoots, filepath.Dir(ws) + "/outside/s.txt", false},
		{"loop", "read_file", nil, rd("loop"), pathpolicy.CodeInvalidPath, ws + "/loop", false},
		{"nul", "read_file", nil, rd("a\x00"), pathpolicy.CodeInvalidPath, "", false},
		{"env", "read_file", nil, rd("src/.env"), pathpolicy.CodeForbiddenPath, ws + "/src/.env", false},
		{"ledger", "write_file", map[string]any{"content": "x"}, wr(".airlock/receipts.jsonl"), pathpolicy.CodeForbiddenPath, ws + "/.airlock/receipts.jsonl", false},
		{"not allowed tool", "search_files", nil, rd("."), pathpolicy.CodeToolNotAllowed, "", false},
		{"write too large", "write_file", map[string]any{"content": "12345678901"}, wr("a.txt"), pathpolicy.CodeTooLarge, ws + "/a.txt", false},
		{"read too large", "read_file", nil, rd("big.txt"), pathpolicy.CodeTooLarge, ws + "/big.txt", true},
		{"windowed read of large", "read_file", map[string]any{"offset": 1}, rd("big.txt"), pathpolicy.CodeAllowed, ws + "/big.txt", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, err := pol.Check(context.Background(), request(env, tc.tool, tc.args, tc.ref))
			if err != nil {
				t.Fatal(err)
			}
			if v.Code != tc.code || (v.Decision == pipeline.Allow) != (tc.code == pathpolicy.CodeAllowed) || v.DecidedBy != pathpolicy.DecidedBy {
				t.Fatalf("verdict = %+v, want %s", v, tc.code)
			}
			if v.Decision == pipeline.Deny && v.Message == "" {
				t.Error("denial without message")
			}
			if tc.resolved == "" {
				return
			}
			if len(v.Paths) != 1 || v.Paths[0].Resolved != tc.resolved || v.Paths[0].Exists != tc.exists || v.Paths[0].Raw != tc.ref.Path {
				t.Errorf("paths = %+v, want resolved %s exists %v", v.Paths, tc.resolved, tc.exists)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  pathpolicy.Config
		want string
	}{
		{"default", pathpolicy.DefaultConfig(), ""},
		{"negative read", pathpolicy.Config{MaxReadBytes: -1}, "max_read_bytes"},
		{"negative write", pathpolicy.Config{MaxWriteBytes: -1}, "max_write_bytes"},
		{"negative budget", pathpolicy.Config{DenialBudget: -1}, "denial_budget"},
		{"bad glob", pathpolicy.Config{DenyNames: []string{"[x"}}, "deny_names"},
		{"nul root", pathpolicy.Config{ReadRoots: []string{"a\x00"}}, "read_roots"},
		{"empty tool", pathpolicy.Config{AllowedTools: []string{""}}, "allowed_tools"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.cfg.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	pol, err := pathpolicy.New(pathpolicy.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := pol.Config()
	if c.MaxReadBytes != 5_000_000 || c.MaxWriteBytes != 2_000_000 || pol.DenialBudget() != 20 || len(c.DenyNames) != 8 {
		t.Errorf("defaults = %+v", c)
	}
	if !pol.Hides("a/.env") || !pol.Hides("a/.git/config") || pol.Hides("a/main.go") {
		t.Error("Hides")
	}
}

// linkedWorkspace reports its workspace by a path that passes through a symbolic link, as a
// workspace mounted or configured through a link does.
type linkedWorkspace struct {
	*local.Env
	ws string
}

func (l linkedWorkspace) Describe() backend.Description {
	d := l.Env.Describe()
	d.Workspace = l.ws
	return d
}

// TestCheckRoots covers roots that are or pass through symbolic links, link targets whose
// ".." follows a missing directory, and paths too long for any kernel.
func TestCheckRoots(t *testing.T) {
	t.Parallel()
	env, ws := world(t)
	dir := filepath.Dir(ws)
	for _, d := range []string{"outside/sub", "shared", "victim"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "victim/secret.txt"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"linkroot":     "outside",
		"shared/evil":  "../victim",
		"shared/l":     "nonexist/../evil",
		"ws/evil":      "../outside",
		"ws/l":         "nonexist/../evil",
		"ws/deep":      "nonexist/x/../../evil",
		"wslink":       "ws",
		"ws/realalias": "real",
	}
	for link, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	rd := func(p string) tool.PathRef { return tool.PathRef{Arg: "path", Path: p, Access: tool.Read} }
	wr := func(p string) tool.PathRef { return tool.PathRef{Arg: "path", Path: p, Access: tool.Write} }
	tests := []struct {
		name        string
		read, write []string
		ws          string // the workspace as the environment reports it; default ws
		ref         tool.PathRef
		code        string
		resolved    string
	}{
		{"write root is a link out", nil, []string{"out"}, "", wr("out/new.txt"), pathpolicy.CodeSymlinkEscape, ws + "/out/new.txt"},
		{"read root is a link out", []string{"out"}, []string{"src"}, "", rd("out/s.txt"), pathpolicy.CodeSymlinkEscape, ws + "/out/s.txt"},
		{"target named by the link's target", nil, []string{"out"}, "", wr(dir + "/outside/new.txt"), pathpolicy.CodeOutsideRoots, dir + "/outside/new.txt"},
		{"root passes through a link", []string{"out/sub"}, []string{"src"}, "", rd("out/sub/x"), pathpolicy.CodeSymlinkEscape, ws + "/out/sub/x"},
		{"root is a link inside", nil, []string{"realalias"}, "", wr("realalias/x.txt"), pathpolicy.CodeSymlinkEscape, ws + "/realalias/x.txt"},
		{"absolute root is a link", nil, []string{dir + "/linkroot"}, "", wr(dir + "/linkroot/n.txt"), pathpolicy.CodeSymlinkEscape, dir + "/linkroot/n.txt"},
		{"covered by a real root", []string{"."}, []string{"src"}, "", rd("realalias/x.txt"), pathpolicy.CodeAllowed, ws + "/real/x.txt"},
		{"real root", nil, []string{"real"}, "", wr("real/x.txt"), pathpolicy.CodeAllowed, ws + "/real/x.txt"},
		{"missing root", nil, []string{"build"}, "", wr("build/x.txt"), pathpolicy.CodeAllowed, ws + "/build/x.txt"},
		{"absolute real root", nil, []string{dir + "/shared"}, "", wr(dir + "/shared/x.txt"), pathpolicy.CodeAllowed, dir + "/shared/x.txt"},
		{"workspace through a link", []string{"."}, []string{"src"}, dir + "/wslink", wr("src/a.go"), pathpolicy.CodeAllowed, ws + "/src/a.go"},
		{"dotdot after missing, outside root", []string{".", dir + "/shared"}, []string{".", dir + "/shared"}, "", rd(dir + "/shared/l/secret.txt"), pathpolicy.CodeInvalidPath, dir + "/shared/l/secret.txt"},
		{"dotdot after missing, write", []string{"."}, []string{".", dir + "/shared"}, "", wr(dir + "/shared/l/new/x.txt"), pathpolicy.CodeInvalidPath, dir + "/shared/l/new/x.txt"},
		{"dotdot after missing, workspace", nil, nil, "", rd("l/s.txt"), pathpolicy.CodeInvalidPath, ws + "/l/s.txt"},
		{"dotdot after two missing", nil, nil, "", rd("deep/s.txt"), pathpolicy.CodeInvalidPath, ws + "/deep/s.txt"},
		{"very long path", nil, nil, "", rd(strings.Repeat("a/", 70_000) + "x"), pathpolicy.CodeInvalidPath, ""},
		{"very long component", nil, nil, "", wr(strings.Repeat("n", 256)), pathpolicy.CodeInvalidPath, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pol, err := pathpolicy.New(pathpolicy.Config{ReadRoots: tc.read, WriteRoots: tc.write})
			if err != nil {
				t.Fatal(err)
			}
			req := request(env, "write_file", map[string]any{"content": "x"}, tc.ref)
			if tc.ws != "" {
				req.Env = linkedWorkspace{Env: env, ws: tc.ws}
			}
			v, err := pol.Check(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if v.Code != tc.code || (v.Decision == pipeline.Allow) != (tc.code == pathpolicy.CodeAllowed) {
				t.Fatalf("verdict = %+v, want %s", v, tc.code)
			}
			if v.Decision == pipeline.Deny && v.Message == "" {
				t.Error("denial without message")
			}
			if tc.resolved != "" && (len(v.Paths) != 1 || v.Paths[0].Resolved != tc.resolved) {
				t.Errorf("paths = %+v, want resolved %s", v.Paths, tc.resolved)
			}
		})
	}
}
