package clienttest

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The official TypeScript SDK client, eliciting during the call, is shown exactly what runs
// and each answer covers what it says (testdata/approvals.mjs).
func TestTypeScriptSDKApprovals(t *testing.T) {
	sdk := filepath.Join(npmDir(), "sdk")
	need(t, "@modelcontextprotocol/sdk", filepath.Join(sdk, "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
	node, err := exec.LookPath("node")
	if err != nil {
		need(t, "node", "/nonexistent/node")
	}
	p := newProject(t, "[network]\nmode = \"open\"\nallow_private = true\n[approvals]\nallow_write = false\n")
	script, err := filepath.Abs(filepath.Join("testdata", "approvals.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, script, sdk, airlockBin, p.config, p.ws).CombinedOutput()
	t.Logf("approvals.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("approvals.mjs: %v", err)
	}
	for _, step := range []string{"fetch_url_shown", "fetch_session_covers_one_url", "guard_before_person", "write_session_covers_one_content",
		"large_file_diff", "replace_all_whole", "escaped", "done"} {
		if !strings.Contains(string(out), "ok "+step+"\n") {
			t.Errorf("step %s did not pass", step)
		}
	}
}
