package mcpserver_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval/pending"
)

// With the ledger configured inside the workspace, the approvals store sits there too. The
// agent tries every road it has — commands (even ones a person approved, so that the
// kernel sandbox and not the classifier is what holds), the file tools and the approval
// tools — to create, change or answer an approval record: none may.
func TestAgentCannotTouchApprovals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, fixtureOpts{ledger: "ws/.airlock/receipts.jsonl", config: "[approvals]\nallow_write = true\n"})
	cs := f.connect(t, nil) // no elicitation: questions stay open in the store
	dir := filepath.Join(f.ws, ".airlock", "approvals")

	// The victim: a call that waits for a person.
	victim := call(t, cs, "terminal", map[string]any{"command": "node -e 1 2>/dev/null; echo victim-ran > victim.txt"})
	id := victim.str("approval_id")
	if victim.status() != mcpStatusPending || id == "" {
		t.Fatalf("victim: %+v", victim)
	}
	recFile := filepath.Join(dir, id+".json")
	before, err := os.ReadFile(recFile)
	must(t, err)
	approved := bytes.Replace(before, []byte(`"state": "pending"`), []byte(`"state": "approved"`), 1)
	forged := filepath.Join(".airlock", "approvals", "apr_00000000000000aa.json")

	// The file tools: write the record, a forged one, patch the state.
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"write_file", map[string]any{"path": ".airlock/approvals/" + id + ".json", "content": string(approved)}},
		{"write_file", map[string]any{"path": forged, "content": strings.ReplaceAll(string(approved), id, "apr_00000000000000aa")}},
		{"patch", map[string]any{"path": ".airlock/approvals/" + id + ".json", "old_string": `"state": "pending"`, "new_string": `"state": "approved"`}},
		{"read_file", map[string]any{"path": ".airlock/approvals/" + id + ".json"}},
		{"write_file", map[string]any{"path": ".airlock/approvals/.lock", "content": "x"}},
	} {
		if r := call(t, cs, c.name, c.args); r.status() == "ok" {
			t.Errorf("%s %v: ran: %+v", c.name, c.args["path"], r)
		}
	}

	// Commands. Each also leaves a marker in the workspace, which shows it ran: a person
	// approves each one, so the kernel sandbox is what stops it, not the classifier.
	must(t, os.WriteFile(filepath.Join(f.ws, "approved.json"), approved, 0o644))
	// The marker sits in a directory of its own: commands cannot make new entries directly
	// in a directory that holds a protected path (here the workspace, holding .airlock).
	must(t, os.Mkdir(filepath.Join(f.ws, "m"), 0o755))
	for i, cmd := range []string{
		`cp approved.json .airlock/approvals/` + id + `.json`,
		`d=.air; d=${d}lock/appr; sed -i s/pending/approved/ ${d}ovals/apr_*.json`,
		`d=.air; d=${d}lock/appr; cp approved.json ${d}ovals/apr_00000000000000ab.json`,
		`d=.air; d=${d}lock; mv $d/approvals $d/old && mkdir $d/approvals && cp approved.json $d/approvals/` + id + `.json`,
		`d=.air; d=${d}lock; rm -rf $d/approvals`,
		`d=.air; d=${d}lock; ln -s ../approved.json $d/approvals/apr_00000000000000ac.json`,
	} {
		marker := filepath.Join(f.ws, "m", "marker")
		_ = os.Remove(marker)
		args := map[string]any{"command": "echo ran > m/marker; " + cmd}
		r := call(t, cs, "terminal", args)
		if r.status() == mcpStatusPending {
			// A person approves the command as shown; it still must not reach the store.
			if _, err := f.store.Decide(r.str("approval_id"), true, pending.Once, "cli", ""); err != nil {
				t.Fatal(err)
			}
			r = call(t, cs, "terminal", args)
		}
		if _, err := os.Stat(marker); err != nil && r.code() != "hard_deny" {
			t.Errorf("command %d did not run, so it proves nothing: %+v", i, r)
		}
	}

	// The approval tools: waiting is all the agent can do; it answers nothing.
	if r := call(t, cs, "approval_wait", map[string]any{"approval_id": id, "timeout": 0.2}); r.status() != mcpStatusPending {
		t.Errorf("approval_wait: %+v", r)
	}
	if r := call(t, cs, "approval_wait", map[string]any{"approval_id": "apr_00000000000000aa", "timeout": 0.2}); r.code() != "approval_not_found" {
		t.Errorf("approval_wait on a forged id: %+v", r)
	}

	after, err := os.ReadFile(recFile)
	if err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the victim's record changed: %v\n%s", err, after)
	}
	ents, err := os.ReadDir(dir)
	must(t, err)
	for _, e := range ents {
		n := e.Name()
		if n == ".lock" || n == id+".json" {
			continue
		}
		rec, err := f.store.Get(strings.TrimSuffix(n, ".json"))
		// Every other record is a question Airlock itself asked about an attack command.
		if err != nil || !e.Type().IsRegular() || rec.Tool != "terminal" || !strings.Contains(rec.Summary, "echo ran > m/marker") {
			t.Errorf("a record Airlock did not write: %s (%+v, %v)", n, rec, err)
		}
	}
	if rec, err := f.store.Get(id); err != nil || rec.State != pending.Pending || rec.Consumed {
		t.Fatalf("victim record: %+v %v", rec, err)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "victim.txt")); err == nil {
		t.Fatal("the victim call ran")
	}
	// And the victim is still pending for the agent: nothing answered it.
	if r := call(t, cs, "terminal", map[string]any{"command": "node -e 1 2>/dev/null; echo victim-ran > victim.txt"}); r.status() != mcpStatusPending || r.str("approval_id") != id {
		t.Fatalf("victim again: %+v", r)
	}
}
