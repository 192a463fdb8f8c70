package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/httpapi"
	"github.com/airlock-dev/airlock/receipt"
)

func TestReceiptsArePagedFilteredAndTheTokensOwn(t *testing.T) {
	f := newFixture(t, "")
	alice := f.session(t, aliceToken)
	bob := f.session(t, bobToken)
	for i := range 5 {
		f.do(t, "POST", "/v1/sessions/"+alice.ID+"/calls", aliceToken, callBody(fmt.Sprintf("echo alice-%d", i)))
	}
	f.do(t, "POST", "/v1/sessions/"+alice.ID+"/calls", aliceToken, `{"name":"read_file","arguments":{"path":"nope.txt"}}`)
	f.do(t, "POST", "/v1/sessions/"+bob.ID+"/calls", bobToken, callBody("echo bob-secret"))

	// Pages of two, newest first, until the cursor runs out: every alice call once.
	var seqs []int64
	cursor := ""
	for range 10 {
		var p httpapi.ReceiptPage
		f.do(t, "GET", "/v1/receipts?event=completed&limit=2&cursor="+cursor, aliceToken, "").decode(t, &p)
		for _, ln := range p.Receipts {
			if ln.Receipt.Client.Caller != "alice" {
				t.Fatalf("alice sees %+v", ln.Receipt)
			}
			if len(seqs) > 0 && ln.Seq >= seqs[len(seqs)-1] {
				t.Fatalf("not newest first: %d after %v", ln.Seq, seqs)
			}
			seqs = append(seqs, ln.Seq)
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if len(seqs) != 6 {
		t.Fatalf("alice's pages hold %d receipts, want 6", len(seqs))
	}
	cases := []struct {
		name, query, token string
		want               int
	}{
		{"every event", "", aliceToken, 12},
		{"by tool", "?event=completed&tool=read_file", aliceToken, 1},
		{"by session", "?event=completed&session=" + alice.ID, aliceToken, 6},
		{"by decision", "?event=completed&decision=allow", aliceToken, 6},
		{"other session", "?session=" + bob.ID, aliceToken, 0},
		{"bob", "?event=completed", bobToken, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := f.do(t, "GET", "/v1/receipts"+tc.query, tc.token, "")
			var p httpapi.ReceiptPage
			a.decode(t, &p)
			if len(p.Receipts) != tc.want {
				t.Fatalf("%d receipts, want %d: %s", len(p.Receipts), tc.want, a.body)
			}
			if tc.token == aliceToken && strings.Contains(string(a.body), bob.ID) {
				t.Fatal("alice's answer names bob's session")
			}
		})
	}
	if a := f.do(t, "GET", "/v1/receipts?limit=0", aliceToken, ""); a.status != 400 || a.errCode() != httpapi.CodeInvalidQuery {
		t.Fatalf("limit=0: %d %s", a.status, a.body)
	}
}

func TestReceiptsVerifyTheLedger(t *testing.T) {
	f := newFixture(t, "")
	si := f.session(t, aliceToken)
	f.do(t, "POST", "/v1/sessions/"+si.ID+"/calls", aliceToken, callBody("echo verify-me"))
	var v httpapi.Verification
	f.do(t, "POST", "/v1/receipts/verify", aliceToken, "").decode(t, &v)
	n, err := receipt.VerifyFile(f.ledger)
	if !v.OK || err != nil || v.Lines != n || v.Lines == 0 {
		t.Fatalf("verify: %+v; the file: %d lines, %v", v, n, err)
	}
	// A changed line is found, and named.
	data, err := os.ReadFile(f.ledger)
	must(t, err)
	must(t, os.WriteFile(f.ledger, []byte(strings.Replace(string(data), `"tool_name":"terminal"`, `"tool_name":"TERMINAL"`, 1)), 0o600))
	v = httpapi.Verification{}
	f.do(t, "POST", "/v1/receipts/verify", aliceToken, "").decode(t, &v)
	if v.OK || v.BadLine == 0 || v.Problem == "" {
		t.Fatalf("a tampered ledger verified: %+v", v)
	}
}

func TestReceiptsFollowStreamsNewCalls(t *testing.T) {
	f := newFixture(t, "")
	alice := f.session(t, aliceToken)
	bob := f.session(t, bobToken)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", f.url+"/v1/receipts?follow=1&tool=terminal", nil)
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	events := sseEvents(resp)
	f.do(t, "POST", "/v1/sessions/"+bob.ID+"/calls", bobToken, callBody("echo bob-follow"))
	f.do(t, "POST", "/v1/sessions/"+alice.ID+"/calls", aliceToken, `{"name":"read_file","arguments":{"path":"x"}}`)
	f.do(t, "POST", "/v1/sessions/"+alice.ID+"/calls", aliceToken, callBody("echo alice-follow"))
	var ev sse
	var ln receipt.Line
	for ev = range events {
		must(t, json.Unmarshal([]byte(ev.data), &ln))
		if ln.Event == receipt.EventCompleted {
			break
		}
	}
	if ev.name != "receipt" || ln.Receipt.SessionID != alice.ID || ln.Receipt.ToolName != "terminal" {
		t.Fatalf("first event: %s %s", ev.name, ev.data)
	}
}
