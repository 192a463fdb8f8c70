package httpapi_test

import (
	"strings"
	"testing"
)

// /metrics needs a token, and counts the calls made over the API with their tool,
// decision and outcome, beside the server's gauges.
func TestMetricsCountCallsBehindTheToken(t *testing.T) {
	f := newFixture(t, "")
	if a := f.do(t, "GET", "/metrics", "", ""); a.status != 401 {
		t.Fatalf("GET /metrics without a token: %d %s", a.status, a.body)
	}
	id := f.session(t, aliceToken).ID
	a := f.do(t, "POST", "/v1/sessions/"+id+"/calls", aliceToken,
		`[{"name":"write_file","arguments":{"path":"m.txt","content":"x"}},{"name":"read_file","arguments":{"path":".env"}}]`)
	if a.status != 200 {
		t.Fatalf("calls: %d %s", a.status, a.body)
	}
	a = f.do(t, "GET", "/metrics", aliceToken, "")
	if a.status != 200 || !strings.HasPrefix(a.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %q", a.status, a.header.Get("Content-Type"))
	}
	body := string(a.body)
	for _, want := range []string{
		`airlock_calls_total{decision="allow",outcome="executed",tool="write_file"} 1`,
		`airlock_calls_total{decision="deny",outcome="not_executed",tool="read_file"} 1`,
		`airlock_call_duration_seconds_count{tool="write_file"} 1`,
		`airlock_serve_sessions_open{kind="api"} 1`,
		`airlock_serve_approvals_pending 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", grepAirlock(body))
	}
}

func grepAirlock(body string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, "airlock_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
