package httpapi_test

import (
	"testing"
	"time"
)

// One token past [serve] max_calls_per_token gets 429 too_many_calls with Retry-After and
// runs nothing; another token is not held up, and a cancel still goes through.
func TestCallsPerTokenAreCapped(t *testing.T) {
	f := newFixture(t, "[serve]\nmax_calls_per_token = 1\n")
	sid := f.session(t, aliceToken).ID
	bob := f.session(t, bobToken).ID
	const marker = "299.5151"
	posted := make(chan answer, 1)
	go func() {
		posted <- f.do(t, "POST", "/v1/sessions/"+sid+"/calls", aliceToken,
			`{"name":"terminal","arguments":{"command":"sleep `+marker+`"},"call_id":"hold-1"}`)
	}()
	for deadline := time.Now().Add(20 * time.Second); len(procsWith(t, marker)) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first call never started")
		}
	}
	a := f.do(t, "POST", "/v1/sessions/"+sid+"/calls", aliceToken, `{"name":"write_file","arguments":{"path":"over.txt","content":"x"},"call_id":"over-1"}`)
	if a.status != 429 || a.errCode() != "too_many_calls" || a.header.Get("Retry-After") == "" {
		t.Fatalf("second call: %d %s %v", a.status, a.body, a.header)
	}
	if a := f.do(t, "GET", "/v1/sessions/"+sid+"/calls/over-1", aliceToken, ""); a.status != 404 {
		t.Fatalf("the refused call ran: %d %s", a.status, a.body)
	}
	if a := f.do(t, "GET", "/v1/sessions/"+sid+"/jobs", aliceToken, ""); a.status != 429 {
		t.Fatalf("a job request over the limit: %d %s", a.status, a.body)
	}
	if a := f.do(t, "POST", "/v1/sessions/"+bob+"/calls", bobToken, `{"name":"terminal","arguments":{"command":"echo bob"}}`); a.status != 200 {
		t.Fatalf("another token: %d %s", a.status, a.body)
	}
	if a := f.do(t, "DELETE", "/v1/sessions/"+sid+"/calls/hold-1", aliceToken, ""); a.status != 200 {
		t.Fatalf("cancel at the limit: %d %s", a.status, a.body)
	}
	<-posted
	if a := f.do(t, "POST", "/v1/sessions/"+sid+"/calls", aliceToken, `{"name":"terminal","arguments":{"command":"echo again"}}`); a.status != 200 {
		t.Fatalf("after the first ended: %d %s", a.status, a.body)
	}
}
