package clienttest

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The official TypeScript SDK client drives the built binary over stdio through every flow
// a coding agent uses (testdata/flows.mjs).
func TestTypeScriptSDKClient(t *testing.T) {
	sdk := filepath.Join(npmDir(), "sdk")
	need(t, "@modelcontextprotocol/sdk", filepath.Join(sdk, "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
	node, err := exec.LookPath("node")
	if err != nil {
		need(t, "node", "/nonexistent/node")
	}
	p := newProject(t, "")
	script, err := filepath.Abs(filepath.Join("testdata", "flows.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, sdk, airlockBin, p.config, p.ws)
	out, err := cmd.CombinedOutput()
	t.Logf("flows.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("flows.mjs: %v", err)
	}
	for _, step := range []string{"list_tools", "files", "terminal", "dangerous_refused", "elicitation_approved", "elicitation_denied",
		"progress", "cancel", "job_output_twice", "job_kill", "done"} {
		if !strings.Contains(string(out), "ok "+step+"\n") {
			t.Errorf("step %s did not pass", step)
		}
	}
}
