package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProtectedFilesThroughSymlinkedDir: run from a symlink to the workspace, the config and
// the ledger stay out of reach of the file tools, search included.
func TestProtectedFilesThroughSymlinkedDir(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	writeConfig(t, ws, "[approvals]\nmode = \"auto\"\n# marker-in-config\n")
	link := filepath.Join(base, "link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	call(t, link, `{"name":"terminal","arguments":{"command":"echo marker-in-ledger"}}`)
	rs := call(t, link, fmt.Sprintf(`[
	  {"name":"search_files","arguments":{"pattern":"marker-in"}},
	  {"name":"read_file","arguments":{"path":"airlock.toml"}},
	  {"name":"read_file","arguments":{"path":%q}}
	]`, ledgerPath(ws)))
	if rs[0].Status != "ok" || strings.Contains(rs[0].Content, "airlock.toml") || strings.Contains(rs[0].Content, "receipts.jsonl") {
		t.Errorf("search leaked a protected file: %s %q", rs[0].Status, rs[0].Content)
	}
	for _, r := range rs[1:] {
		if r.Status != "denied" || r.ErrorCode != "forbidden_path" && r.ErrorCode != "outside_roots" {
			t.Errorf("protected file read: %s %s", r.Status, r.ErrorCode)
		}
	}
}

// TestProtectedFilesInsideContainer: the config sits in the host directory mounted as the
// workspace; inside the container it is protected at its mounted path.
func TestProtectedFilesInsideContainer(t *testing.T) {
	t.Parallel()
	dir, _, _ := dockerSetup(t, "")
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(filepath.Join(dir, "airlock.toml"))
	// A ledger configured inside the mounted workspace (the default lies outside it).
	writeConfig(t, dir, strings.Replace(string(cfg), "[approvals]",
		fmt.Sprintf("[[environment.docker.volumes]]\nhost = %q\ncontainer = \"/workspace\"\n[ledger]\npath = \".airlock/receipts.jsonl\"\n[approvals]", dir), 1))
	rs := call(t, dir, `[
	  {"name":"read_file","arguments":{"path":"airlock.toml"}},
	  {"name":"write_file","arguments":{"path":"/workspace/airlock.toml","content":"[approvals]\nmode = \"auto\"\n"}},
	  {"name":"read_file","arguments":{"path":".airlock/receipts.jsonl"}},
	  {"name":"write_file","arguments":{"path":"ok.txt","content":"fine"}}
	]`)
	for _, r := range rs[:3] {
		if r.Status != "denied" || r.ErrorCode != "forbidden_path" {
			t.Errorf("protected file in the container: %s %s %s", r.Status, r.ErrorCode, r.ErrorMessage)
		}
	}
	if rs[3].Status != "ok" {
		t.Errorf("ordinary write: %s %s %s", rs[3].Status, rs[3].ErrorCode, rs[3].ErrorMessage)
	}
}
