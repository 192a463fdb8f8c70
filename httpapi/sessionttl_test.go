package httpapi_test

import (
	"testing"
	"time"

	"github.com/airlock-dev/airlock/httpapi"
)

// PATCH gives a session its own idle TTL within [serve] max_session_ttl: the session says
// its new expiry, outlives the server's TTL, and a value past the maximum is refused.
func TestSessionTTLExtended(t *testing.T) {
	f := newFixture(t, "[session]\nidle_ttl = \"1s\"\n[serve]\nmax_session_ttl = \"1h\"\n")
	short := f.session(t, aliceToken).ID
	long := f.session(t, aliceToken).ID
	for _, tc := range []struct {
		name, body, code string
		status           int
	}{
		{"past the maximum", `{"idle_ttl_seconds": 7200}`, "invalid_ttl", 400},
		{"zero", `{"idle_ttl_seconds": 0}`, "invalid_ttl", 400},
		{"missing", `{}`, "invalid_ttl", 400},
		{"unknown field", `{"ttl": 60}`, "unknown_field", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if a := f.do(t, "PATCH", "/v1/sessions/"+long, aliceToken, tc.body); a.status != tc.status || a.errCode() != tc.code {
				t.Fatalf("%d %s, want %d %s", a.status, a.body, tc.status, tc.code)
			}
		})
	}
	if a := f.do(t, "PATCH", "/v1/sessions/"+long, bobToken, `{"idle_ttl_seconds": 60}`); a.status != 404 {
		t.Fatalf("another token: %d %s", a.status, a.body)
	}
	a := f.do(t, "PATCH", "/v1/sessions/"+long, aliceToken, `{"idle_ttl_seconds": 600}`)
	var si httpapi.SessionInfo
	a.decode(t, &si)
	if a.status != 200 || si.IdleTTLSeconds != 600 || si.ExpiresAt == nil || time.Until(*si.ExpiresAt) < 590*time.Second {
		t.Fatalf("extend: %d %s", a.status, a.body)
	}
	// The server's own TTL reaps the other session; the extended one stays.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if f.do(t, "GET", "/v1/sessions/"+short, aliceToken, "").status == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the session with the server's TTL was never reaped")
		}
	}
	if a := f.do(t, "GET", "/v1/sessions/"+long, aliceToken, ""); a.status != 200 {
		t.Fatalf("the extended session was reaped: %d %s", a.status, a.body)
	}
}
