package httpapi_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/receipt"
)

// procsWith lists the host's processes whose command line holds marker: the sandbox's PID
// namespace has PIDs of its own, but the host's /proc sees its processes too.
func procsWith(t *testing.T, marker string) []string {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	must(t, err)
	var out []string
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil || !strings.Contains(string(b), marker) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join(filepath.Dir(d), "stat")); err == nil && strings.Contains(string(st), ") Z ") {
			continue // a zombie is gone for our purpose
		}
		out = append(out, d)
	}
	return out
}

// A running call is polled by id, then cancelled: its whole process tree is gone, the
// answer and the receipt say interrupted (the pipeline's word for a call cancelled while it
// ran; cancelled is for one cancelled before it started), and a second DELETE finds it
// finished.
func TestCallPolledAndCancelledKillsItsTree(t *testing.T) {
	f := newFixture(t, "")
	sid := f.session(t, aliceToken).ID
	const marker = "299.4242"
	posted := make(chan answer, 1)
	go func() {
		posted <- f.do(t, "POST", "/v1/sessions/"+sid+"/calls", aliceToken,
			`{"name":"terminal","arguments":{"command":"sleep `+marker+` & sleep `+marker+`; wait"},"call_id":"long-1"}`)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for len(procsWith(t, marker)) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the command's processes never appeared")
		}
		time.Sleep(20 * time.Millisecond)
	}
	a := f.do(t, "GET", "/v1/sessions/"+sid+"/calls/long-1", aliceToken, "")
	if a.status != 200 || !strings.Contains(string(a.body), `"state":"running"`) {
		t.Fatalf("poll while running: %d %s", a.status, a.body)
	}
	if a := f.do(t, "DELETE", "/v1/sessions/"+sid+"/calls/long-1", bobToken, ""); a.status != 404 || a.errCode() != "session_not_found" {
		t.Fatalf("another token cancels: %d %s", a.status, a.body)
	}
	a = f.do(t, "DELETE", "/v1/sessions/"+sid+"/calls/long-1", aliceToken, "")
	var st struct {
		State  string          `json:"state"`
		Result pipeline.Result `json:"result"`
	}
	a.decode(t, &st)
	if a.status != 200 || st.State != "finished" || st.Result.Status != pipeline.StatusInterrupted || st.Result.Receipt == nil || st.Result.Receipt.Outcome != receipt.Interrupted {
		t.Fatalf("cancel: %d %s", a.status, a.body)
	}
	if left := procsWith(t, marker); len(left) > 0 {
		t.Fatalf("processes left after the cancel: %v", left)
	}
	if p := <-posted; p.status != 200 || !strings.Contains(string(p.body), `"status":"interrupted"`) {
		t.Fatalf("the POST's answer: %d %s", p.status, p.body)
	}
	if a := f.do(t, "DELETE", "/v1/sessions/"+sid+"/calls/long-1", aliceToken, ""); a.status != 409 || a.errCode() != "call_finished" {
		t.Fatalf("second cancel: %d %s", a.status, a.body)
	}
	if a := f.do(t, "GET", "/v1/sessions/"+sid+"/calls/nope", aliceToken, ""); a.status != 404 || a.errCode() != "call_not_found" {
		t.Fatalf("unknown call: %d %s", a.status, a.body)
	}
	var rec *receipt.Receipt
	for _, ln := range f.receipts(t) {
		if ln.Event == receipt.EventCompleted && ln.Receipt != nil && ln.Receipt.CallID == "long-1" {
			rec = ln.Receipt
		}
	}
	if rec == nil || rec.Status != string(pipeline.StatusInterrupted) || rec.Outcome != receipt.Interrupted || rec.Client == nil || rec.Client.Caller != "alice" {
		t.Fatalf("receipt: %+v", rec)
	}
}
