package mcpserver_test

import (
	"context"
	"github.com/airlock-dev/airlock/configs/configtest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/approval/pending"
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/mcpserver"
)

type fixture struct {
	ws     string
	ledger string
	store  *pending.Store
	srv    *mcpserver.Server
}

type fixtureOpts struct {
	ttl        time.Duration
	elicitWait time.Duration
	// config is added to the fixture's airlock.toml.
	config string
	// ledger is ledger.path, relative to the fixture's directory (the workspace is "ws");
	// empty means state/receipts.jsonl, outside the workspace.
	ledger string
}

// newFixture builds the server the way `airlock mcp` does: the runtime from a config (local
// backend on a temporary workspace, its own state directory), the MCP approver over the
// pending store, one session.
func newFixture(t *testing.T, fo fixtureOpts) *fixture {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	must(t, os.MkdirAll(ws, 0o755))
	if fo.ledger == "" {
		fo.ledger = "state/receipts.jsonl"
	}
	cfg, err := configs.Parse([]byte(`[environment]
type = "local"
workspace = "ws"
timeout = 60
[ledger]
path = "`+fo.ledger+`"
`+jobsTable(fo.config)+configtest.AskToRunCode(fo.config)), dir)
	must(t, err)
	eng, err := engine.New(context.Background(), cfg, engine.WithPendingApprovals(fo.ttl), engine.WithSessionTTL(-1), engine.WithEphemeralSessions(), engine.WithJobPromotion())
	t.Cleanup(func() {
		if eng != nil {
			_ = eng.Close(context.Background())
		}
	})
	must(t, err)
	sess, err := eng.Session(context.Background(), "s1")
	must(t, err)
	srv, err := mcpserver.New(context.Background(), mcpserver.Options{
		Registry: eng.Registry(), Session: sess, ElicitWait: fo.elicitWait, ApprovalWaitMax: 10 * time.Second,
		Toolsets: cfg.Tools.Enabled, AllowedTools: cfg.Policy.AllowedTools,
	})
	must(t, err)
	// The store as `airlock approvals` opens it, from another process.
	store, err := pending.Open(cfg.ApprovalsDir())
	must(t, err)
	return &fixture{ws: cfg.WorkspaceDir(), ledger: cfg.LedgerPath(), store: store, srv: srv}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// connect runs the server on in-memory transports and connects a Go SDK client with opts.
func (f *fixture) connect(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.srv.Run(ctx, st)
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "airlock-test", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), ct, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		<-done
	})
	return cs
}

// jobsTable is the fixture's [jobs] table, unless the test brings its own.
func jobsTable(extra string) string {
	if strings.Contains(extra, "[jobs]") {
		return ""
	}
	return "[jobs]\npromote_after = \"20s\"\nmax_wait = \"10s\"\n"
}
