package mcpserver_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/pending"
	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/fileops"
	"github.com/airlock-dev/airlock/jobs"
	"github.com/airlock-dev/airlock/mcpserver"
	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/receipt"
	"github.com/airlock-dev/airlock/terminal"
	"github.com/airlock-dev/airlock/tool"
)

// session is a runtime session built the way the runtime builds one: path policy, the
// approval gate with the MCP approver, the ledger, the local backend.
type session struct {
	id  string
	p   *pipeline.Pipeline
	env backend.Environment
}

func (s *session) ID() string                                               { return s.id }
func (s *session) Run(ctx context.Context, c pipeline.Call) pipeline.Result { return s.p.Run(ctx, c) }
func (s *session) Environment() backend.Environment                         { return s.env }

type fixture struct {
	ws     string
	ledger string
	store  *pending.Store
	srv    *mcpserver.Server
	jobs   *jobs.Manager
}

type fixtureOpts struct {
	ttl        time.Duration
	elicitWait time.Duration
}

func newFixture(t *testing.T, fo fixtureOpts) *fixture {
	t.Helper()
	ws := t.TempDir()
	state := t.TempDir()
	env, err := local.New(local.Config{Workspace: ws, DefaultTimeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Close(context.Background()) })
	ledgerPath := filepath.Join(state, "receipts.jsonl")
	ledger, err := receipt.Open(ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ledger.Close() })
	store, err := pending.Open(filepath.Join(state, "approvals"))
	if err != nil {
		t.Fatal(err)
	}
	ap := mcpserver.NewApprover(store, mcpserver.ApproverOptions{TTL: fo.ttl, ElicitWait: fo.elicitWait})
	jm := jobs.NewManager(jobs.Options{Ledger: ledger})
	t.Cleanup(func() { _ = jm.Close(context.Background()) })

	reg := tool.NewRegistry()
	must(t, reg.Register(terminal.Definition(terminal.Options{Jobs: jm, PromoteAfter: 20 * time.Second})))
	for _, d := range jobs.Tools(jm, jobs.ToolOptions{MaxWait: 10 * time.Second}) {
		must(t, reg.Register(d))
	}
	pol, err := pathpolicy.New(pathpolicy.DefaultConfig(), pathpolicy.WithProtectedFiles(ledgerPath))
	must(t, err)
	must(t, fileops.Register(reg, fileops.OptionsFrom(pol.Config())))
	acfg := approval.DefaultConfig()
	acfg.AllowWrite = true
	gate, err := approval.NewGate(acfg, approval.WithApprover(ap))
	must(t, err)
	p, err := pipeline.New(pipeline.Options{
		Registry: reg, Env: env, Ledger: ledger, Policy: pol, SessionID: "s1",
		Approval: &approval.Step{Gate: gate, CommandTool: terminal.Name},
	})
	must(t, err)
	srv, err := mcpserver.New(context.Background(), mcpserver.Options{
		Registry: reg, Session: &session{id: "s1", p: p, env: env}, Approver: ap, ApprovalWaitMax: 10 * time.Second,
	})
	must(t, err)
	return &fixture{ws: ws, ledger: ledgerPath, store: store, srv: srv, jobs: jm}
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
