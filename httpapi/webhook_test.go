package httpapi_test

import (
	"crypto/hmac"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/httpapi"
)

// A chat bot's receiver on loopback gets each new pending approval once, signed; it checks
// the signature the way a receiver must (HMAC-SHA256 of the raw body, compared in constant
// time), and answers the approval through the API.
func TestWebhookPostsEachNewApprovalSigned(t *testing.T) {
	secret := []byte("webhook-secret-for-the-test")
	type post struct {
		sig  string
		body []byte
	}
	posts := make(chan post, 8)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		posts <- post{r.Header.Get(httpapi.SignatureHeader), b}
	}))
	t.Cleanup(recv.Close)
	f := newFixtureWith(t, askConfig, nil, func(o *httpapi.Options) {
		o.Webhook = &httpapi.Webhook{URL: recv.URL, Secret: secret}
	})
	si := f.session(t, aliceToken)
	id := f.pendingCall(t, aliceToken, si.ID, "touch marker-webhook")
	var p post
	select {
	case p = <-posts:
	case <-time.After(20 * time.Second):
		t.Fatal("no webhook post")
	}
	if !hmac.Equal([]byte(p.sig), []byte(httpapi.Sign(secret, p.body))) {
		t.Fatalf("signature %q does not verify", p.sig)
	}
	if hmac.Equal([]byte(p.sig), []byte(httpapi.Sign([]byte("another secret"), p.body))) {
		t.Fatal("the signature verifies with another secret")
	}
	var ev httpapi.WebhookEvent
	must(t, json.Unmarshal(p.body, &ev))
	if ev.Event != "approval_pending" || ev.Approval.ID != id || ev.Caller != "alice" || ev.Approval.Summary != "touch marker-webhook" {
		t.Fatalf("event: %s", p.body)
	}
	if a := f.do(t, "POST", "/v1/approvals/"+id, aliceToken, `{"decision":"approve"}`); a.status != 200 {
		t.Fatalf("answer: %d %s", a.status, a.body)
	}
	// The same approval is not posted again.
	select {
	case p := <-posts:
		t.Fatalf("posted again: %s", p.body)
	case <-time.After(time.Second):
	}
}
