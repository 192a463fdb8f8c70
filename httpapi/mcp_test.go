package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/httpapi"
	"github.com/airlock-dev/airlock/mcpserver"
	"github.com/airlock-dev/airlock/receipt"
)

// bearerTransport adds a token to every request, as a remote MCP client configured with a
// header does.
type bearerTransport struct {
	token string
	// sessionID, when set, replaces the Mcp-Session-Id the client sends.
	sessionID string
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	if b.sessionID != "" && r.Header.Get("Mcp-Session-Id") != "" {
		r.Header.Set("Mcp-Session-Id", b.sessionID)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (f *fixture) mcpClient(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: f.url + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{token: token}}, MaxRetries: -1,
	}, nil)
	must(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func callText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	must(t, err)
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	var st map[string]any
	b, _ := json.Marshal(res.Meta[mcpserver.ResultMetaKey])
	_ = json.Unmarshal(b, &st)
	return text, st
}

func TestTwoMCPClientsHaveSessionsOfTheirOwn(t *testing.T) {
	f := newFixture(t, "")
	a := f.mcpClient(t, aliceToken)
	b := f.mcpClient(t, aliceToken)
	_, st := callText(t, a, "terminal", map[string]any{"background": true, "command": "exec sleep 60"})
	data, _ := st["data"].(map[string]any)
	job, _ := data["job_id"].(string)
	if job == "" {
		t.Fatalf("no job started: %+v", st)
	}
	if l, _ := callText(t, a, "job_list", nil); !strings.Contains(l, job) {
		t.Fatalf("a's job_list does not show its job %s: %s", job, l)
	}
	if l, _ := callText(t, b, "job_list", nil); strings.Contains(l, job) {
		t.Fatalf("b's job_list shows a's job %s: %s", job, l)
	}
	// Each MCP session is a runtime session of the token's, and it ends with the MCP session.
	var list struct{ Sessions []httpapi.SessionInfo }
	f.do(t, "GET", "/v1/sessions", aliceToken, "").decode(t, &list)
	if len(list.Sessions) != 2 || list.Sessions[0].Kind != httpapi.KindMCP || list.Sessions[0].ID == list.Sessions[1].ID {
		t.Fatalf("sessions: %+v", list.Sessions)
	}
	f.do(t, "GET", "/v1/sessions", bobToken, "").decode(t, &list)
	if len(list.Sessions) != 0 {
		t.Fatalf("bob sees %d sessions", len(list.Sessions))
	}
	must(t, a.Close())
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.do(t, "GET", "/v1/sessions", aliceToken, "").decode(t, &list)
		if len(list.Sessions) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a's MCP session ended, %d runtime sessions are open, want 1", len(list.Sessions))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// b still works, and its calls' receipts name the caller and the MCP client.
	if text, _ := callText(t, b, "terminal", map[string]any{"command": "echo mcp-http-marker"}); !strings.Contains(text, "mcp-http-marker") {
		t.Fatalf("b's call: %s", text)
	}
	var found bool
	for _, ln := range f.receipts(t) {
		r := ln.Receipt
		if r != nil && ln.Event == receipt.EventCompleted && r.ToolName == "terminal" && r.SessionID == list.Sessions[0].ID {
			found = r.Client != nil && r.Client.Caller == "alice" && r.Client.Name == "serve-test"
		}
	}
	if !found {
		t.Errorf("no receipt of b's call naming caller alice and client serve-test")
	}
}

func TestAnotherTokenCannotUseAnMCPSession(t *testing.T) {
	f := newFixture(t, "")
	a := f.mcpClient(t, aliceToken)
	// Bob replays alice's Mcp-Session-Id with his own valid token.
	c := mcp.NewClient(&mcp.Implementation{Name: "bob", Version: "1"}, nil)
	bob, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: f.url + "/mcp", MaxRetries: -1, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearerTransport{token: bobToken, sessionID: a.ID()}},
	}, nil)
	if err == nil {
		t.Cleanup(func() { _ = bob.Close() })
		_, err = bob.CallTool(context.Background(), &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{"command": "echo bob-was-here"}})
	}
	if err == nil {
		t.Fatal("bob's call on alice's MCP session was served")
	}
	for _, ln := range f.receipts(t) {
		if ln.Receipt != nil && ln.Receipt.Client != nil && ln.Receipt.Client.Caller == "bob" {
			t.Errorf("a call of bob's ran: %+v", ln.Receipt)
		}
	}
}
