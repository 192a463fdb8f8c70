package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/jobs"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/receipt"
)

// startJob starts a background job on the session over the API and returns its id.
func (f *fixture) startJob(t *testing.T, sid, command string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"name": "terminal", "arguments": map[string]any{"command": command, "background": true}})
	a := f.do(t, "POST", "/v1/sessions/"+sid+"/calls", aliceToken, string(body))
	var res pipeline.Result
	a.decode(t, &res)
	data, _ := res.Data.(map[string]any)
	id, _ := data["job_id"].(string)
	if a.status != 200 || res.Status != pipeline.StatusOK || id == "" {
		t.Fatalf("start job: %d %s", a.status, a.body)
	}
	return id
}

// chunk reads a job's output from offset over the API.
func (f *fixture) chunk(t *testing.T, sid, job, query string) jobs.Chunk {
	t.Helper()
	a := f.do(t, "GET", "/v1/sessions/"+sid+"/jobs/"+job+"/output"+query, aliceToken, "")
	var res struct {
		Data jobs.Chunk `json:"data"`
	}
	if a.status != 200 {
		t.Fatalf("output: %d %s", a.status, a.body)
	}
	a.decode(t, &res)
	return res.Data
}

// An interactive program started as a job is answered through POST …/input: its output
// shows the answer, and the input is a call with a receipt naming the caller.
func TestJobAnsweredThroughInput(t *testing.T) {
	f := newFixture(t, "")
	sid := f.session(t, aliceToken).ID
	job := f.startJob(t, sid, `echo question; read x; echo got-$x`)

	a := f.do(t, "POST", "/v1/sessions/"+sid+"/jobs/"+job+"/input", aliceToken, `{"data":"answer-marker-3\n"}`)
	if a.status != 200 {
		t.Fatalf("input: %d %s", a.status, a.body)
	}
	inputCall := a.header.Get("Airlock-Call-Id")
	var c jobs.Chunk
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c = f.chunk(t, sid, job, "?offset=0"); c.State != jobs.Running {
			break
		}
	}
	if c.Output != "question\ngot-answer-marker-3\n" || c.State != jobs.Exited || c.Offset != 0 || c.NextOffset != int64(len(c.Output)) {
		t.Fatalf("output after the answer: %+v", c)
	}
	// From an offset: the rest only; the cursor of job_output without offset did not move.
	if c := f.chunk(t, sid, job, "?offset=9&max_bytes=4"); c.Output != "got-" || c.Offset != 9 || c.NextOffset != 13 {
		t.Fatalf("from offset 9: %+v", c)
	}
	a = f.do(t, "GET", "/v1/sessions/"+sid+"/jobs/"+job, aliceToken, "")
	var in jobs.Info
	a.decode(t, &in)
	if a.status != 200 || in.ID != job || in.UnreadBytes != int64(len("question\ngot-answer-marker-3\n")) {
		t.Fatalf("GET job: %d %s", a.status, a.body)
	}
	// The job has ended: input now is a conflict with the tool's code.
	if a := f.do(t, "POST", "/v1/sessions/"+sid+"/jobs/"+job+"/input", aliceToken, `{"data":"late\n"}`); a.status != 409 || a.errCode() != "job_no_input" {
		t.Fatalf("input to an ended job: %d %s", a.status, a.body)
	}
	var rec *receipt.Receipt
	for _, ln := range f.receipts(t) {
		if ln.Event == receipt.EventCompleted && ln.Receipt != nil && ln.Receipt.CallID == inputCall {
			rec = ln.Receipt
		}
	}
	if rec == nil || rec.ToolName != jobs.InputTool || rec.Decision != "allow" || rec.Outcome != receipt.Executed || clientOf(rec) == nil || rec.Client.Caller != "alice" {
		t.Fatalf("receipt of the input call %q: %+v", inputCall, rec)
	}
}

// Jobs are listed and killed through the API; another token's session and an unknown job
// are not found.
func TestJobsListedAndKilled(t *testing.T) {
	f := newFixture(t, "")
	sid := f.session(t, aliceToken).ID
	job := f.startJob(t, sid, `sleep 300`)

	a := f.do(t, "GET", "/v1/sessions/"+sid+"/jobs", aliceToken, "")
	if a.status != 200 || !strings.Contains(string(a.body), job) {
		t.Fatalf("list: %d %s", a.status, a.body)
	}
	for _, tc := range []struct {
		name, method, path, token, code string
		status                          int
	}{
		{"another token's session", "GET", "/v1/sessions/" + sid + "/jobs", bobToken, "session_not_found", 404},
		{"another token kills", "DELETE", "/v1/sessions/" + sid + "/jobs/" + job, bobToken, "session_not_found", 404},
		{"unknown job", "GET", "/v1/sessions/" + sid + "/jobs/job_000000000000", aliceToken, "job_not_found", 404},
		{"unknown job output", "GET", "/v1/sessions/" + sid + "/jobs/job_000000000000/output", aliceToken, "job_not_found", 404},
		{"bad offset", "GET", "/v1/sessions/" + sid + "/jobs/" + job + "/output?offset=-1", aliceToken, "invalid_query", 400},
		{"unknown input field", "POST", "/v1/sessions/" + sid + "/jobs/" + job + "/input", aliceToken, "unknown_field", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := ""
			if tc.method == "POST" {
				body = `{"data":"x","stdin":true}`
			}
			a := f.do(t, tc.method, tc.path, tc.token, body)
			if a.status != tc.status || a.errCode() != tc.code {
				t.Fatalf("%d %s, want %d %s", a.status, a.body, tc.status, tc.code)
			}
		})
	}
	a = f.do(t, "DELETE", "/v1/sessions/"+sid+"/jobs/"+job, aliceToken, "")
	var res pipeline.Result
	a.decode(t, &res)
	data, _ := res.Data.(map[string]any)
	if a.status != 200 || data["state"] != string(jobs.Killed) {
		t.Fatalf("kill: %d %s", a.status, a.body)
	}
}
