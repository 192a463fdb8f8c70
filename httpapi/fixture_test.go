package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/httpapi"
	"github.com/airlock-dev/airlock/mcpserver"
	"github.com/airlock-dev/airlock/receipt"
)

// Two callers' tokens.
const (
	aliceToken = "alice-token-0123456789abcdef0123456789"
	bobToken   = "bob-token-0123456789abcdef0123456789abc"
)

type fixture struct {
	url    string
	ws     string
	ledger string
	srv    *httpapi.Server
	eng    *engine.Engine
}

// newFixture serves the HTTP front end on 127.0.0.1:0 over a runtime built from a config
// (local backend on a temporary workspace) the way `airlock serve` builds it.
func newFixture(t testing.TB, extra string, opts ...engine.Option) *fixture {
	t.Helper()
	return newFixtureWith(t, extra, opts)
}

// newFixtureWith is newFixture with changes to the server's options before it is built.
func newFixtureWith(t testing.TB, extra string, opts []engine.Option, srvOpts ...func(*httpapi.Options)) *fixture {
	t.Helper()
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "ws"), 0o755))
	cfg, err := configs.Parse([]byte(`[environment]
type = "local"
workspace = "ws"
timeout = 60
[ledger]
path = "state/receipts.jsonl"
[jobs]
promote_after = "20s"
max_wait = "10s"
`+extra), dir)
	must(t, err)
	engOpts := append([]engine.Option{engine.WithPendingApprovals(time.Minute), engine.WithJobPromotion(), engine.WithMetrics()}, opts...)
	eng, err := engine.New(context.Background(), cfg, engOpts...)
	must(t, err)
	tokens := httpapi.NewTokens()
	tokens.Add("alice", aliceToken)
	tokens.Add("bob", bobToken)
	o := httpapi.Options{
		Engine: eng, Tokens: tokens, MaxBodyBytes: 64 << 10,
		MCPServer: func(ctx context.Context, sess mcpserver.Session) (*mcp.Server, error) {
			ms, err := mcpserver.New(ctx, mcpserver.Options{Registry: eng.Registry(), Session: sess, ElicitWait: 5 * time.Second,
				Toolsets: cfg.Tools.Enabled, AllowedTools: cfg.Policy.AllowedTools})
			if err != nil {
				return nil, err
			}
			return ms.MCP(), nil
		},
	}
	for _, f := range srvOpts {
		f(&o)
	}
	srv, err := httpapi.New(o)
	must(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Shutdown(context.Background(), 5*time.Second); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		_ = eng.Close(context.Background())
	})
	return &fixture{url: "http://" + ln.Addr().String(), ws: cfg.WorkspaceDir(), ledger: cfg.LedgerPath(), srv: srv, eng: eng}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) errCode() string {
	var e httpapi.ErrorBody
	_ = json.Unmarshal(a.body, &e)
	return e.Error.Code
}

func (a answer) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("answer %d %s: %v", a.status, a.body, err)
	}
}

// do sends one request; token "" sends none. header holds extra headers.
func (f *fixture) do(t testing.TB, method, path, token, body string, header ...string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, err := http.NewRequest(method, f.url+path, rd)
	must(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return send(t, req, header...)
}

// send sets the extra headers (name, value, …) on req, sends it and reads the answer.
func send(t testing.TB, req *http.Request, header ...string) answer {
	t.Helper()
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	must(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: data}
}

// session opens a session for token and returns its id.
func (f *fixture) session(t testing.TB, token string) httpapi.SessionInfo {
	t.Helper()
	a := f.do(t, "POST", "/v1/sessions", token, "")
	if a.status != http.StatusCreated {
		t.Fatalf("POST /v1/sessions: %d %s", a.status, a.body)
	}
	var si httpapi.SessionInfo
	a.decode(t, &si)
	return si
}

// receipts reads the ledger after checking its chain.
func (f *fixture) receipts(t testing.TB) []receipt.Line {
	t.Helper()
	if _, err := receipt.VerifyFile(f.ledger); err != nil {
		t.Fatalf("ledger does not verify: %v", err)
	}
	fh, err := os.Open(f.ledger)
	must(t, err)
	defer fh.Close()
	lines, err := receipt.ReadAll(fh)
	must(t, err)
	return lines
}
