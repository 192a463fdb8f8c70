package httpapi_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/httpapi"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/plan"
	"github.com/airlock-dev/airlock/receipt"
)

// A session opened with a plan whose first step allows only read_file: a write is blocked
// (pre_hook_blocked, the step named, nothing written, a receipt), a read completes the step
// and the write then runs; the plan's state is read with the session.
func TestPlanHoldsTheSessionToItsSteps(t *testing.T) {
	f := newFixture(t, "")
	must(t, os.WriteFile(filepath.Join(f.ws, "notes.txt"), []byte("hello\n"), 0o644))
	a := f.do(t, "POST", "/v1/sessions", aliceToken, `{"plan":{"steps":[
		{"name":"read the notes","tools":["read_file"]},
		{"name":"write the answer","tools":["write_file"]}]}}`)
	if a.status != 201 {
		t.Fatalf("POST /v1/sessions with a plan: %d %s", a.status, a.body)
	}
	var si httpapi.SessionInfo
	a.decode(t, &si)
	if si.Plan == nil || si.Plan.Current != 0 || si.Plan.Steps[0].State != plan.Current {
		t.Fatalf("plan state at open: %+v", si.Plan)
	}
	post := func(body string) pipeline.Result {
		var r pipeline.Result
		f.do(t, "POST", "/v1/sessions/"+si.ID+"/calls", aliceToken, body).decode(t, &r)
		return r
	}
	write := `{"name":"write_file","call_id":"w1","arguments":{"path":"answer.txt","content":"42\n"}}`
	r := post(write)
	if r.Status != pipeline.StatusBlocked || r.ErrorCode != pipeline.CodePreHookBlocked || !strings.Contains(r.Content, `"read the notes"`) {
		t.Fatalf("write in step 1: %s %s %q", r.Status, r.ErrorCode, r.Content)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "answer.txt")); !os.IsNotExist(err) {
		t.Fatalf("the blocked write left a file: %v", err)
	}
	if r := post(`{"name":"read_file","call_id":"r1","arguments":{"path":"notes.txt"}}`); r.Status != pipeline.StatusOK {
		t.Fatalf("read in step 1: %+v", r)
	}
	f.do(t, "GET", "/v1/sessions/"+si.ID, aliceToken, "").decode(t, &si)
	if si.Plan.Current != 1 || si.Plan.Steps[0].State != plan.Done || si.Plan.Steps[0].Succeeded != 1 {
		t.Fatalf("after the read: %+v", si.Plan)
	}
	if r := post(strings.Replace(write, "w1", "w2", 1)); r.Status != pipeline.StatusOK {
		t.Fatalf("write in step 2: %+v", r)
	}
	f.do(t, "GET", "/v1/sessions/"+si.ID, aliceToken, "").decode(t, &si)
	if !si.Plan.Complete {
		t.Fatalf("after the write: %+v", si.Plan)
	}
	got := map[string]*receipt.Receipt{}
	for _, ln := range f.receipts(t) {
		if ln.Event == receipt.EventCompleted {
			got[ln.Receipt.CallID] = ln.Receipt
		}
	}
	if w := got["w1"]; w == nil || w.ErrorCode != pipeline.CodePreHookBlocked || w.DecidedBy != "pre_hook:plan" || w.HandlerStarted {
		t.Errorf("the blocked write's receipt: %+v", w)
	}
	if got["w2"] == nil || got["w2"].Outcome != receipt.Executed {
		t.Errorf("the allowed write's receipt: %+v", got["w2"])
	}
}

// A plan that cannot work is refused with the field named, and no session is opened.
func TestInvalidPlanIsRefused(t *testing.T) {
	f := newFixture(t, "")
	a := f.do(t, "POST", "/v1/sessions", aliceToken, `{"plan":{"steps":[{"name":"x","tools":["read_file","rm_rf"]}]}}`)
	if a.status != 400 || a.errCode() != httpapi.CodeInvalidPlan || !strings.Contains(string(a.body), "plan.steps[0].tools[1]") {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if n := len(f.eng.Sessions()); n != 0 {
		t.Fatalf("%d sessions open after a refused plan", n)
	}
}
