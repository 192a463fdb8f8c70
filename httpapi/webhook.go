package httpapi

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/airlock-dev/airlock/approval/pending"
)

// A webhook lets a person answer from wherever they are (a chat bot posts the question and
// calls POST /v1/approvals/{id} with the answer): each approval that starts waiting while
// the server runs is posted once, as JSON, signed with HMAC-SHA256 of the body so that the
// receiver knows it came from this server. The store is watched, not the gate, because an
// approval may be asked by any session of the runtime.

// SignatureHeader carries "sha256=" and the hex HMAC-SHA256 of the body.
const SignatureHeader = "X-Airlock-Signature-256"

// Webhook is where new pending approvals are posted.
type Webhook struct {
	URL    string
	Secret []byte
	// Client sends the posts; nil means one with a 10 s timeout that follows no redirect.
	Client *http.Client
}

// WebhookEvent is the body of a webhook post.
type WebhookEvent struct {
	Event    string   `json:"event"` // approval_pending
	SentAt   string   `json:"sent_at"`
	Caller   string   `json:"caller,omitempty"` // the token whose session asked
	Approval Approval `json:"approval"`
}

// Sign returns the signature header's value for body.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// watchApprovals posts each approval that becomes pending after it starts, until the
// server drains.
func (s *Server) watchApprovals(st *pending.Store, wh Webhook) {
	if wh.Client == nil {
		wh.Client = &http.Client{Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	seen := map[string]bool{}
	first := true
	t := time.NewTicker(followPoll)
	defer t.Stop()
	for !s.draining.Load() {
		recs, err := st.List(true)
		if err != nil {
			s.log.Warn("approval webhook: list", "error", err)
		}
		for _, r := range recs {
			if seen[r.ID] {
				continue
			}
			seen[r.ID] = true
			if !first {
				go s.post(wh, WebhookEvent{Event: "approval_pending", SentAt: time.Now().UTC().Format(time.RFC3339Nano),
					Caller: s.ownerOf(r.SessionID), Approval: Approval{Record: r, Batch: batchOf(recs, r)}})
			}
		}
		first = false
		<-t.C
	}
}

// post sends one event, trying three times.
func (s *Server) post(wh Webhook, ev WebhookEvent) {
	body, err := json.Marshal(ev)
	if err != nil {
		return
	}
	log := s.log.With("approval_id", ev.Approval.ID)
	for attempt := 1; attempt <= 3; attempt++ {
		err = deliver(wh, body)
		if err == nil {
			log.Debug("approval webhook delivered")
			return
		}
		time.Sleep(time.Duration(attempt) * time.Second)
	}
	log.Warn("approval webhook failed", "error", err)
}

func deliver(wh Webhook, body []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, wh.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "airlock-serve")
	req.Header.Set(SignatureHeader, Sign(wh.Secret, body))
	resp, err := wh.Client.Do(req)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return errors.New("webhook: " + resp.Status)
	}
	return nil
}

func (s *Server) ownerOf(sessionID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.sessions[sessionID]; ok {
		return e.owner
	}
	return ""
}
