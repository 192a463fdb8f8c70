package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/httpapi"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/receipt"
)

func TestEveryRouteButHealthNeedsAToken(t *testing.T) {
	f := newFixture(t, "")
	for _, tc := range []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/healthz", "", 200},
		{"GET", "/readyz", "", 200},
		{"GET", "/v1/openapi.json", "", 401},
		{"GET", "/v1/sessions", "", 401},
		{"POST", "/v1/sessions", "", 401},
		{"POST", "/v1/sessions", "not-a-token-of-this-server-0123456789", 401},
		{"GET", "/v1/sessions/s-0123", "", 401},
		{"POST", "/v1/sessions/s-0123/calls", "", 401},
		{"POST", "/mcp", "", 401},
		{"GET", "/mcp", "", 401},
		{"GET", "/nothing-here", "", 401},
		{"GET", "/v1/openapi.json", aliceToken, 200},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			a := f.do(t, tc.method, tc.path, tc.token, "")
			if a.status != tc.want {
				t.Fatalf("%s %s: %d %s, want %d", tc.method, tc.path, a.status, a.body, tc.want)
			}
			if tc.want == 401 {
				if a.errCode() != httpapi.CodeUnauthorized || a.header.Get("WWW-Authenticate") == "" {
					t.Errorf("401 without the envelope or WWW-Authenticate: %s %v", a.body, a.header)
				}
			}
		})
	}
}

func TestATokenSeesOnlyItsOwnSessions(t *testing.T) {
	f := newFixture(t, "")
	si := f.session(t, aliceToken)
	id := si.ID
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/v1/sessions/" + id, ""},
		{"DELETE", "/v1/sessions/" + id, ""},
		{"POST", "/v1/sessions/" + id + "/calls", `{"name":"read_file","arguments":{"path":"x"}}`},
	} {
		if a := f.do(t, tc.method, tc.path, bobToken, tc.body); a.status != 404 || a.errCode() != httpapi.CodeSessionNotFound {
			t.Errorf("bob %s %s: %d %s, want 404 session_not_found", tc.method, tc.path, a.status, a.body)
		}
	}
	var list struct{ Sessions []httpapi.SessionInfo }
	f.do(t, "GET", "/v1/sessions", bobToken, "").decode(t, &list)
	if len(list.Sessions) != 0 {
		t.Errorf("bob lists %d sessions, want none: %+v", len(list.Sessions), list.Sessions)
	}
	// Alice's session is still there after bob's DELETE, and hers to close.
	if a := f.do(t, "GET", "/v1/sessions/"+id, aliceToken, ""); a.status != 200 {
		t.Fatalf("alice GET: %d %s", a.status, a.body)
	}
	if a := f.do(t, "DELETE", "/v1/sessions/"+id, aliceToken, ""); a.status != 204 {
		t.Fatalf("alice DELETE: %d %s", a.status, a.body)
	}
	if a := f.do(t, "GET", "/v1/sessions/"+id, aliceToken, ""); a.status != 404 {
		t.Fatalf("GET after DELETE: %d %s", a.status, a.body)
	}
}

func TestSessionSaysItsIsolation(t *testing.T) {
	f := newFixture(t, "")
	si := f.session(t, aliceToken)
	if si.ID == "" || si.Kind != httpapi.KindAPI || si.Isolation.Backend != "local" || si.Isolation.Workspace == "" {
		t.Errorf("session: %+v", si)
	}
	if si.ExpiresAt == nil || si.IdleTTLSeconds != 1800 || !si.ExpiresAt.After(si.CreatedAt) {
		t.Errorf("expiry: %v ttl %v", si.ExpiresAt, si.IdleTTLSeconds)
	}
}

func TestCallsRunThroughTheRuntimeAndNameTheCaller(t *testing.T) {
	f := newFixture(t, "")
	id := f.session(t, aliceToken).ID
	a := f.do(t, "POST", "/v1/sessions/"+id+"/calls", aliceToken, `{"name":"terminal","arguments":{"command":"echo serve-marker-1"},"call_id":"c1"}`)
	if a.status != 200 {
		t.Fatalf("one call: %d %s", a.status, a.body)
	}
	var one pipeline.Result
	a.decode(t, &one)
	if one.Status != pipeline.StatusOK || !strings.Contains(one.Content, "serve-marker-1") || one.CallID != "c1" || one.Receipt == nil {
		t.Fatalf("one call: %+v", one)
	}
	a = f.do(t, "POST", "/v1/sessions/"+id+"/calls", aliceToken,
		`[{"name":"write_file","arguments":{"path":"a.txt","content":"hi\n"},"call_id":"c2"},{"name":"terminal","arguments":{"command":"rm -rf /"},"call_id":"c3"}]`)
	var two []pipeline.Result
	a.decode(t, &two)
	if a.status != 200 || len(two) != 2 || two[0].Status != pipeline.StatusOK || two[1].Status == pipeline.StatusOK {
		t.Fatalf("array: %d %s", a.status, a.body)
	}
	if b, err := os.ReadFile(filepath.Join(f.ws, "a.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("write_file did not write: %q %v", b, err)
	}
	seen := map[string]*receipt.Receipt{}
	for _, ln := range f.receipts(t) {
		if ln.Event == receipt.EventCompleted && ln.Receipt != nil {
			seen[ln.Receipt.CallID] = ln.Receipt
		}
	}
	for _, c := range []string{"c1", "c2", "c3"} {
		r := seen[c]
		if r == nil || r.Client == nil || r.Client.Caller != "alice" || r.SessionID != id {
			t.Errorf("receipt of %s: %+v (client %+v)", c, r, clientOf(r))
		}
	}
}

func clientOf(r *receipt.Receipt) *receipt.Client {
	if r == nil {
		return nil
	}
	return r.Client
}

func TestOpenAIToolCallsRoundTrip(t *testing.T) {
	f := newFixture(t, "")
	id := f.session(t, aliceToken).ID
	msg := `{"role":"assistant","content":null,"tool_calls":[
	  {"id":"call_A","type":"function","function":{"name":"terminal","arguments":"{\"command\":\"echo openai-marker\"}"}},
	  {"id":"call_B","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"missing.txt\"}"}}]}`
	a := f.do(t, "POST", "/v1/sessions/"+id+"/calls", aliceToken, msg)
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	var ans httpapi.MessageAnswer
	a.decode(t, &ans)
	if len(ans.Messages) != 2 || len(ans.Results) != 2 {
		t.Fatalf("answer: %s", a.body)
	}
	m := ans.Messages
	if m[0].Role != "tool" || m[0].ToolCallID != "call_A" || !strings.Contains(m[0].Content, "openai-marker") {
		t.Errorf("first tool message: %+v", m[0])
	}
	if m[1].Role != "tool" || m[1].ToolCallID != "call_B" || !strings.Contains(m[1].Content, ans.Results[1].ErrorCode) || ans.Results[1].ErrorCode == "" {
		t.Errorf("second tool message: %+v (result %+v)", m[1], ans.Results[1])
	}
	// The messages append as they are: each is a whole chat message.
	var raw struct{ Messages []map[string]any }
	a.decode(t, &raw)
	for _, m := range raw.Messages {
		if len(m) != 3 {
			t.Errorf("tool message has fields %v, want role, tool_call_id, content", m)
		}
	}
}

func TestIdempotentRepeatRunsOnce(t *testing.T) {
	f := newFixture(t, "")
	id := f.session(t, aliceToken).ID
	body := `{"name":"terminal","arguments":{"command":"echo once >> marker.txt"}}`
	path := "/v1/sessions/" + id + "/calls"
	// Two at once, then one after: one run.
	var wg sync.WaitGroup
	answers := make([]answer, 3)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = f.do(t, "POST", path, aliceToken, body, "Idempotency-Key", "k-1")
		}()
	}
	wg.Wait()
	answers[2] = f.do(t, "POST", path, aliceToken, body, "Idempotency-Key", "k-1")
	for i, a := range answers {
		if a.status != 200 || string(a.body) != string(answers[0].body) {
			t.Errorf("answer %d: %d %s, want the first's bytes", i, a.status, a.body)
		}
	}
	if answers[2].header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the repeat does not say it was replayed: %v", answers[2].header)
	}
	data, err := os.ReadFile(filepath.Join(f.ws, "marker.txt"))
	must(t, err)
	if string(data) != "once\n" {
		t.Errorf("marker.txt = %q: the command ran more than once", data)
	}
	// The same key with another body is refused; another key runs again.
	if a := f.do(t, "POST", path, aliceToken, `{"name":"terminal","arguments":{"command":"echo twice >> marker.txt"}}`, "Idempotency-Key", "k-1"); a.status != 422 || a.errCode() != httpapi.CodeIdempotencyKeyReused {
		t.Errorf("same key, other body: %d %s", a.status, a.body)
	}
	// Another token's same key is its own.
	if a := f.do(t, "POST", path, bobToken, body, "Idempotency-Key", "k-1"); a.status != 404 {
		t.Errorf("bob with alice's key on alice's session: %d %s", a.status, a.body)
	}
	f.do(t, "POST", path, aliceToken, body, "Idempotency-Key", "k-2")
	data, _ = os.ReadFile(filepath.Join(f.ws, "marker.txt"))
	if string(data) != "once\nonce\n" {
		t.Errorf("marker.txt = %q after a new key", data)
	}
}

func TestBadRequestsNameTheProblem(t *testing.T) {
	f := newFixture(t, "")
	id := f.session(t, aliceToken).ID
	calls := "/v1/sessions/" + id + "/calls"
	big := fmt.Sprintf(`{"name":"terminal","arguments":{"command":"echo %s"}}`, strings.Repeat("x", 70<<10))
	for _, tc := range []struct {
		name, method, path, body, ctype string
		status                          int
		code, says                      string
	}{
		{"bad json", "POST", calls, `{"name":`, "", 400, httpapi.CodeInvalidJSON, "ends in the middle"},
		{"trailing text", "POST", calls, `{"name":"terminal"} x`, "", 400, httpapi.CodeInvalidJSON, "followed by more text"},
		{"unknown call field", "POST", calls, `{"name":"terminal","argumnets":{}}`, "", 400, httpapi.CodeUnknownField, `"argumnets"`},
		{"unknown message field", "POST", calls, `{"role":"assistant","tool_calls":[],"bogus":1}`, "", 400, httpapi.CodeUnknownField, `"bogus"`},
		{"not calls", "POST", calls, `"terminal"`, "", 400, httpapi.CodeInvalidCalls, "JSON string"},
		{"unknown session field", "POST", "/v1/sessions", `{"image":"x"}`, "", 400, httpapi.CodeUnknownField, `"image"`},
		{"oversize", "POST", calls, big, "", 413, httpapi.CodeBodyTooLarge, "65536"},
		{"media type", "POST", calls, `{}`, "text/plain", 415, httpapi.CodeUnsupportedMediaType, "text/plain"},
		{"no route", "GET", "/v2/x", "", "", 404, httpapi.CodeNotFound, "/v2/x"},
		{"method", "PUT", "/v1/sessions", "", "", 405, httpapi.CodeMethodNotAllowed, "GET, POST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.ctype != "" {
				hdr = []string{"Content-Type", tc.ctype}
			}
			a := f.do(t, tc.method, tc.path, aliceToken, tc.body, hdr...)
			var e httpapi.ErrorBody
			_ = json.Unmarshal(a.body, &e)
			if a.status != tc.status || e.Error.Code != tc.code || !strings.Contains(e.Error.Message, tc.says) {
				t.Errorf("%d %s, want %d %s saying %q", a.status, a.body, tc.status, tc.code, tc.says)
			}
		})
	}
	// Nothing above ran: no call reached the ledger.
	for _, ln := range f.receipts(t) {
		if ln.Receipt != nil && ln.Receipt.ToolName == "terminal" {
			t.Errorf("a refused request left a receipt: %+v", ln.Receipt)
		}
	}
}

func TestOpenAPIDescribesTheRoutes(t *testing.T) {
	f := newFixture(t, "")
	a := f.do(t, "GET", "/v1/openapi.json", aliceToken, "")
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	a.decode(t, &doc)
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("not an OpenAPI 3 document: %q", doc.OpenAPI)
	}
	var documented []string
	for p, ops := range doc.Paths {
		for m := range ops {
			if m == "parameters" {
				continue
			}
			documented = append(documented, strings.ToUpper(m)+" "+p)
		}
	}
	want := map[string]bool{}
	for _, r := range f.srv.Routes() {
		want[r] = true
	}
	for _, d := range documented {
		if !want[d] {
			t.Errorf("documented but not served: %s", d)
		}
		delete(want, d)
	}
	for r := range want {
		t.Errorf("served but not documented: %s", r)
	}
	// Every error code of the envelope is in the document's list of codes.
	for _, c := range httpapi.Codes {
		if !strings.Contains(string(a.body), `"`+c+`"`) {
			t.Errorf("error code %s is not in the OpenAPI document", c)
		}
	}
	if a.header.Get("Content-Type") != "application/json" {
		t.Errorf("content type %q", a.header.Get("Content-Type"))
	}
	_ = http.StatusOK
}
