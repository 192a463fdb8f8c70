package clienttest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/mcpserver"
)

type result struct {
	Text string
	St   struct {
		Status     string `json:"status"`
		ErrorCode  string `json:"error_code"`
		ApprovalID string `json:"approval_id"`
		DecidedBy  string `json:"decided_by"`
		Next       string `json:"next"`
	}
	IsError bool
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) result {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	var r result
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			r.Text += tc.Text
		}
	}
	if res.StructuredContent != nil {
		// Claude Code and Codex would show the model this object instead of the text.
		t.Fatalf("result carries structuredContent: %v", res.StructuredContent)
	}
	b, _ := json.Marshal(res.Meta[mcpserver.ResultMetaKey])
	_ = json.Unmarshal(b, &r.St)
	r.IsError = res.IsError
	return r
}

// A client that cannot elicit gets approval_pending at once; a person answers with
// `airlock approvals` from a second process while the server runs, and the agent's waiting
// approval_wait gets the call's result. A denial's message reaches the model.
func TestApprovalAnsweredFromAnotherProcess(t *testing.T) {
	t.Parallel()
	p := newProject(t, "")
	cs := p.connect(t, nil)

	r := callTool(t, cs, "terminal", map[string]any{"command": "node -e 1 2>/dev/null; echo approved > out.txt; echo it-ran"})
	if r.St.Status != "approval_pending" || r.St.ApprovalID == "" || !strings.Contains(r.St.Next, "airlock approvals approve") {
		t.Fatalf("first answer: %+v", r)
	}
	id := r.St.ApprovalID
	list, err := p.airlock(t, "approvals", "list")
	if err != nil || !strings.Contains(list, id) || !strings.Contains(list, "node -e 1") {
		t.Fatalf("approvals list: %v\n%s", err, list)
	}

	waited := make(chan result, 1)
	go func() { waited <- callTool(t, cs, "approval_wait", map[string]any{"approval_id": id}) }()
	time.Sleep(300 * time.Millisecond) // the wait is under way before the person answers
	if out, err := p.airlock(t, "approvals", "approve", id); err != nil {
		t.Fatalf("approvals approve: %v\n%s", err, out)
	}
	r = <-waited
	if r.IsError || r.St.Status != "ok" || !strings.Contains(r.Text, "it-ran") || !strings.Contains(r.St.DecidedBy, "person:cli") {
		t.Fatalf("after approval: %+v", r)
	}
	if b, err := os.ReadFile(filepath.Join(p.ws, "out.txt")); err != nil || string(b) != "approved\n" {
		t.Fatalf("approved command's effect: %q %v", b, err)
	}
	if out, err := p.airlock(t, "approvals", "approve", id); err == nil {
		t.Fatalf("a second answer was accepted:\n%s", out)
	}

	// Denied with a message, answered before the agent asks again: the same call again gets it.
	args := map[string]any{"command": "node -e 2; touch denied.txt"}
	r = callTool(t, cs, "terminal", args)
	if r.St.Status != "approval_pending" {
		t.Fatalf("second pending: %+v", r)
	}
	if out, err := p.airlock(t, "approvals", "deny", r.St.ApprovalID, "--message", "use the test runner, not node -e"); err != nil {
		t.Fatalf("approvals deny: %v\n%s", err, out)
	}
	r = callTool(t, cs, "terminal", args)
	if !r.IsError || r.St.ErrorCode != "denied_by_person" || !strings.Contains(r.Text, "use the test runner, not node -e") ||
		!strings.Contains(r.St.DecidedBy, "person:cli") {
		t.Fatalf("denied: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(p.ws, "denied.txt")); err == nil {
		t.Fatal("denied command ran")
	}
	// The receipts say who answered.
	ledger, err := os.ReadFile(filepath.Join(p.dir, "state", "receipts.jsonl"))
	if err != nil || !regexp.MustCompile(`"decided_by":"[^"]*person:cli`).Match(ledger) {
		t.Fatalf("ledger has no person:cli decision: %v", err)
	}
}

// An approval nobody answers expires as a denial: the call never runs, and a late answer
// is refused.
func TestUnansweredApprovalExpires(t *testing.T) {
	t.Parallel()
	p := newProject(t, "[mcp]\napproval_ttl = \"1s\"\n")
	cs := p.connect(t, nil)
	r := callTool(t, cs, "terminal", map[string]any{"command": "node -e 3; touch expired.txt"})
	if r.St.Status != "approval_pending" {
		t.Fatalf("pending: %+v", r)
	}
	id := r.St.ApprovalID
	w := callTool(t, cs, "approval_wait", map[string]any{"approval_id": id, "timeout": 10})
	if !w.IsError || w.St.ErrorCode != "approval_expired" || w.St.DecidedBy != "approval:expired" {
		t.Fatalf("expired: %+v", w)
	}
	if out, err := p.airlock(t, "approvals", "approve", id); err == nil {
		t.Fatalf("an expired approval was approved:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(p.ws, "expired.txt")); err == nil {
		t.Fatal("expired call ran")
	}
}
