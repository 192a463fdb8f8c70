package httpapi_test

import (
	"testing"

	"github.com/airlock-dev/airlock/httpapi"
	"github.com/airlock-dev/airlock/receipt"
)

// A session token works on its session only: it runs calls there (receipted as its
// owner's), is refused everywhere else — other sessions of the same owner, the list, new
// sessions, /mcp, /metrics — and dies with the session.
func TestSessionTokenIsHeldToItsSession(t *testing.T) {
	f := newFixture(t, "")
	a := f.do(t, "POST", "/v1/sessions", aliceToken, `{"session_token": true}`)
	var cs httpapi.CreatedSession
	a.decode(t, &cs)
	if a.status != 201 || len(cs.SessionToken) < 40 {
		t.Fatalf("create with a session token: %d %s", a.status, a.body)
	}
	tok, sid := cs.SessionToken, cs.ID
	other := f.session(t, aliceToken).ID

	if a := f.do(t, "GET", "/v1/sessions/"+sid, tok, ""); a.status != 200 {
		t.Fatalf("own session: %d %s", a.status, a.body)
	}
	a = f.do(t, "POST", "/v1/sessions/"+sid+"/calls", tok, `{"name":"terminal","arguments":{"command":"echo scoped"},"call_id":"st-1"}`)
	if a.status != 200 {
		t.Fatalf("call: %d %s", a.status, a.body)
	}
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/v1/sessions", ""},
		{"POST", "/v1/sessions", ""},
		{"GET", "/v1/sessions/" + other, ""},
		{"POST", "/v1/sessions/" + other + "/calls", `{"name":"terminal","arguments":{"command":"echo x"}}`},
		{"DELETE", "/v1/sessions/" + other, ""},
		{"GET", "/v1/sessions/" + sid + "x/jobs", ""},
		{"POST", "/mcp", `{}`},
		{"GET", "/metrics", ""},
		{"GET", "/v1/approvals", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			if a := f.do(t, tc.method, tc.path, tok, tc.body); a.status != 403 || a.errCode() != "token_scope" {
				t.Fatalf("%d %s, want 403 token_scope", a.status, a.body)
			}
		})
	}
	if a := f.do(t, "GET", "/v1/sessions/"+other, aliceToken, ""); a.status != 200 {
		t.Fatalf("the other session was touched: %d %s", a.status, a.body)
	}
	var rec *receipt.Receipt
	for _, ln := range f.receipts(t) {
		if ln.Event == receipt.EventCompleted && ln.Receipt != nil && ln.Receipt.CallID == "st-1" {
			rec = ln.Receipt
		}
	}
	if rec == nil || rec.Client == nil || rec.Client.Caller != "alice" || rec.SessionID != sid {
		t.Fatalf("receipt: %+v", rec)
	}
	if a := f.do(t, "DELETE", "/v1/sessions/"+sid, tok, ""); a.status != 204 {
		t.Fatalf("close own session: %d %s", a.status, a.body)
	}
	if a := f.do(t, "GET", "/v1/sessions/"+sid, tok, ""); a.status != 401 {
		t.Fatalf("token after its session closed: %d %s", a.status, a.body)
	}
}
