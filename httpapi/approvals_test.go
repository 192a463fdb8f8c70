package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/httpapi"
	"github.com/airlock-dev/airlock/pipeline"
)

// askConfig makes a workspace write ask a person: manual approvals without allow_write.
const askConfig = "[approvals]\nmode = \"manual\"\nallow_write = false\n"

// pendingCall submits a command that waits for a person and returns its approval id.
func (f *fixture) pendingCall(t testing.TB, token, sessionID, command string) string {
	t.Helper()
	a := f.do(t, "POST", "/v1/sessions/"+sessionID+"/calls", token, callBody(command))
	var res pipeline.Result
	a.decode(t, &res)
	if res.ErrorCode != pipeline.CodeApprovalPending || res.ApprovalID == "" {
		t.Fatalf("call %q: want approval_pending with an id, got %d %s", command, a.status, a.body)
	}
	return res.ApprovalID
}

func callBody(command string) string {
	b, _ := json.Marshal(map[string]any{"name": "terminal", "arguments": map[string]string{"command": command}})
	return string(b)
}

func TestApprovalsAnswerTheRuntimesQuestion(t *testing.T) {
	f := newFixture(t, askConfig)
	si := f.session(t, aliceToken)
	id := f.pendingCall(t, aliceToken, si.ID, "touch marker-approved")

	var list struct{ Approvals []httpapi.Approval }
	f.do(t, "GET", "/v1/approvals?session="+si.ID, aliceToken, "").decode(t, &list)
	if len(list.Approvals) != 1 || list.Approvals[0].ID != id || list.Approvals[0].Summary != "touch marker-approved" ||
		list.Approvals[0].Backend == "" || len(list.Approvals[0].Reasons) == 0 {
		t.Fatalf("list: %+v", list.Approvals)
	}
	if a := f.do(t, "POST", "/v1/approvals/"+id, aliceToken, `{"decision":"approve","scope":"once"}`); a.status != 200 {
		t.Fatalf("approve: %d %s", a.status, a.body)
	}
	if a := f.do(t, "POST", "/v1/approvals/"+id, aliceToken, `{"decision":"deny"}`); a.status != 409 || a.errCode() != httpapi.CodeApprovalDecided {
		t.Fatalf("second answer: %d %s", a.status, a.body)
	}
	// The same call again runs, once, and its receipt names the token that approved.
	a := f.do(t, "POST", "/v1/sessions/"+si.ID+"/calls", aliceToken, callBody("touch marker-approved"))
	var res pipeline.Result
	a.decode(t, &res)
	if res.Status != pipeline.StatusOK || res.Receipt == nil || !strings.Contains(res.Receipt.DecidedBy, "person:http:alice") {
		t.Fatalf("approved call: %s", a.body)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "marker-approved")); err != nil {
		t.Fatalf("the approved command did not run: %v", err)
	}

	// A denial's message reaches the model.
	id = f.pendingCall(t, aliceToken, si.ID, "touch marker-denied")
	if a := f.do(t, "POST", "/v1/approvals/"+id, aliceToken, `{"decision":"deny","message":"use the scratch dir instead"}`); a.status != 200 {
		t.Fatalf("deny: %d %s", a.status, a.body)
	}
	a = f.do(t, "POST", "/v1/sessions/"+si.ID+"/calls", aliceToken, callBody("touch marker-denied"))
	res = pipeline.Result{}
	a.decode(t, &res)
	if res.Status == pipeline.StatusOK || !strings.Contains(res.Content, "use the scratch dir instead") {
		t.Fatalf("denied call: %s", a.body)
	}
	if _, err := os.Stat(filepath.Join(f.ws, "marker-denied")); err == nil {
		t.Fatal("the denied command ran")
	}
}

func TestApprovalsAreTheTokensOwn(t *testing.T) {
	f := newFixture(t, askConfig)
	si := f.session(t, aliceToken)
	id := f.pendingCall(t, aliceToken, si.ID, "touch marker-alice")
	cases := []struct {
		name, method, path, body string
	}{
		{"get", "GET", "/v1/approvals/" + id, ""},
		{"decide", "POST", "/v1/approvals/" + id, `{"decision":"approve"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := f.do(t, tc.method, tc.path, bobToken, tc.body)
			if a.status != 404 || a.errCode() != httpapi.CodeApprovalNotFound || strings.Contains(string(a.body), "marker-alice") {
				t.Fatalf("bob: %d %s", a.status, a.body)
			}
		})
	}
	var list struct{ Approvals []httpapi.Approval }
	f.do(t, "GET", "/v1/approvals?status=all", bobToken, "").decode(t, &list)
	if len(list.Approvals) != 0 {
		t.Fatalf("bob lists alice's approvals: %+v", list.Approvals)
	}
	if a := f.do(t, "GET", "/v1/approvals/"+id, aliceToken, ""); a.status != 200 {
		t.Fatalf("alice: %d %s", a.status, a.body)
	}
}

// A page on another site cannot answer an approval, whatever it manages to send.
func TestApprovalsRefuseCrossSiteRequests(t *testing.T) {
	f := newFixture(t, askConfig)
	si := f.session(t, aliceToken)
	id := f.pendingCall(t, aliceToken, si.ID, "touch marker-csrf")
	host := strings.TrimPrefix(f.url, "http://")
	cases := []struct {
		name   string
		header []string
		status int
		code   string
	}{
		{"cross-site fetch", []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}, 403, httpapi.CodeCrossSite},
		{"same-site other origin", []string{"Sec-Fetch-Site", "same-site"}, 403, httpapi.CodeCrossSite},
		{"foreign origin only", []string{"Origin", "http://127.0.0.1:1"}, 403, httpapi.CodeCrossSite},
		{"null origin", []string{"Origin", "null"}, 403, httpapi.CodeCrossSite},
		{"bad decision same origin", []string{"Sec-Fetch-Site", "same-origin", "Origin", "http://" + host}, 400, httpapi.CodeInvalidDecision},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"decision":"approve"}`
			if tc.status == 400 {
				body = `{"decision":"maybe"}`
			}
			a := f.do(t, "POST", "/v1/approvals/"+id, aliceToken, body, tc.header...)
			if a.status != tc.status || a.errCode() != tc.code {
				t.Fatalf("%d %s", a.status, a.body)
			}
		})
	}
	var got httpapi.Approval
	f.do(t, "GET", "/v1/approvals/"+id, aliceToken, "").decode(t, &got)
	if got.State != "pending" {
		t.Fatalf("a refused request changed the approval: %s", got.State)
	}
}

func TestApprovalDecisionIsChecked(t *testing.T) {
	f := newFixture(t, askConfig)
	si := f.session(t, aliceToken)
	id := f.pendingCall(t, aliceToken, si.ID, "touch marker-check")
	cases := []struct{ name, body, code, mentions string }{
		{"unknown decision", `{"decision":"ok"}`, httpapi.CodeInvalidDecision, "decision"},
		{"unknown scope", `{"decision":"approve","scope":"forever"}`, httpapi.CodeInvalidDecision, "scope"},
		{"scope on a denial", `{"decision":"deny","scope":"session"}`, httpapi.CodeInvalidDecision, "scope"},
		{"message on an approval", `{"decision":"approve","message":"x"}`, httpapi.CodeInvalidDecision, "message"},
		{"unknown field", `{"decision":"approve","scpoe":"once"}`, httpapi.CodeUnknownField, "scpoe"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := f.do(t, "POST", "/v1/approvals/"+id, aliceToken, tc.body)
			if a.status != 400 || a.errCode() != tc.code || !strings.Contains(string(a.body), tc.mentions) {
				t.Fatalf("%d %s", a.status, a.body)
			}
		})
	}
}

func TestApprovalsFollowStreamsNewQuestionsAndAnswers(t *testing.T) {
	f := newFixture(t, askConfig)
	si := f.session(t, aliceToken)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", f.url+"/v1/approvals?follow=1", nil)
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	events := sseEvents(resp)
	id := f.pendingCall(t, aliceToken, si.ID, "touch marker-follow")
	next := func(want string) httpapi.Approval {
		t.Helper()
		for ev := range events {
			var a httpapi.Approval
			must(t, json.Unmarshal([]byte(ev.data), &a))
			if ev.name == "approval" && a.ID == id && string(a.State) == want {
				return a
			}
		}
		t.Fatalf("stream ended before approval %s was %s", id, want)
		return httpapi.Approval{}
	}
	if a := next("pending"); a.Summary != "touch marker-follow" {
		t.Fatalf("pending event: %+v", a)
	}
	f.do(t, "POST", "/v1/approvals/"+id, aliceToken, `{"decision":"deny","message":"no"}`)
	if a := next("denied"); a.Message != "no" || a.DecidedBy != "http:alice" {
		t.Fatalf("decision event: %+v", a)
	}
}

type sse struct{ name, data string }

// sseEvents parses an event stream until it ends.
func sseEvents(resp *http.Response) <-chan sse {
	ch := make(chan sse)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		var ev sse
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.data += line[6:]
			case line == "" && ev.data != "":
				ch <- ev
				ev = sse{}
			}
		}
	}()
	return ch
}

// A follow stream ends when the server drains, rather than holding shutdown for its grace.
func TestFollowStreamsEndAtShutdown(t *testing.T) {
	f := newFixture(t, askConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	var streams []<-chan sse
	for _, path := range []string{"/v1/approvals?follow=1", "/v1/receipts?follow=1"} {
		req, err := http.NewRequestWithContext(ctx, "GET", f.url+path, nil)
		must(t, err)
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		defer resp.Body.Close()
		streams = append(streams, sseEvents(resp))
	}
	done := make(chan error, 1)
	go func() { done <- f.srv.Shutdown(ctx, time.Minute) }()
	for i, ev := range streams {
		for range ev { // drain until the server ends the stream
		}
		if ctx.Err() != nil {
			t.Fatalf("stream %d outlived the test's deadline", i)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

// A file change waits with its whole diff, which the API shows as the person will see it.
func TestApprovalShowsAFileChangesDiff(t *testing.T) {
	f := newFixture(t, askConfig)
	must(t, os.WriteFile(filepath.Join(f.ws, "notes.txt"), []byte("old line\n"), 0o644))
	si := f.session(t, aliceToken)
	a := f.do(t, "POST", "/v1/sessions/"+si.ID+"/calls", aliceToken, `{"name":"write_file","arguments":{"path":"notes.txt","content":"new line\n"}}`)
	var res pipeline.Result
	a.decode(t, &res)
	if res.ApprovalID == "" {
		t.Fatalf("write_file did not wait for a person: %s", a.body)
	}
	var got httpapi.Approval
	f.do(t, "GET", "/v1/approvals/"+res.ApprovalID, aliceToken, "").decode(t, &got)
	if !strings.Contains(got.Preview, "-old line") || !strings.Contains(got.Preview, "+new line") {
		t.Fatalf("preview lacks the diff: %q", got.Preview)
	}
}

// An approval for the session is the runtime's: the same command runs again unasked.
func TestApprovalForTheSessionCoversTheSameCommand(t *testing.T) {
	f := newFixture(t, askConfig)
	si := f.session(t, aliceToken)
	id := f.pendingCall(t, aliceToken, si.ID, "touch marker-session")
	if a := f.do(t, "POST", "/v1/approvals/"+id, aliceToken, `{"decision":"approve","scope":"session"}`); a.status != 200 {
		t.Fatalf("approve: %d %s", a.status, a.body)
	}
	for i := range 2 {
		if res := f.run(t, si.ID, "touch marker-session"); res.Status != pipeline.StatusOK {
			t.Fatalf("run %d: %+v", i, res)
		}
	}
	// Another session is not covered.
	other := f.session(t, aliceToken)
	f.pendingCall(t, aliceToken, other.ID, "touch marker-session")
}
