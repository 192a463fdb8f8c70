package mcpserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/approval/pending"
	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/mcpserver"
)

// On Docker the resident helper's live output frames feed progress notifications while the
// command runs: the command waits for a file the test creates only once a notification
// carried its first line.
func TestProgressNotificationsOnDocker(t *testing.T) {
	dir := t.TempDir()
	toml, _ := dockertest.Config(t, "mcp", 60, "", "")
	cfg, err := configs.Parse([]byte(toml+"[ledger]\npath = \"state/receipts.jsonl\"\n"), dir)
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	eng, err := engine.New(ctx, cfg, engine.WithPendingApprovals(0), engine.WithSessionTTL(-1), engine.WithEphemeralSessions())
	if eng != nil {
		t.Cleanup(func() { _ = eng.Close(context.Background()) })
	}
	must(t, err)
	sess, err := eng.Session(ctx, "s1")
	must(t, err)
	srv, err := mcpserver.New(ctx, mcpserver.Options{Registry: eng.Registry(), Session: sess,
		ApprovalWaitMax: 10 * time.Second, Toolsets: cfg.Tools.Enabled, AllowedTools: cfg.Policy.AllowedTools})
	must(t, err)
	store, err := pending.Open(cfg.ApprovalsDir())
	must(t, err)
	f := &fixture{ws: cfg.WorkspaceDir(), ledger: cfg.LedgerPath(), store: store, srv: srv}

	first := make(chan struct{})
	var once sync.Once
	cs := f.connect(t, &mcp.ClientOptions{ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
		if strings.Contains(req.Params.Message, "first") {
			once.Do(func() { close(first) })
		}
	}})
	params := &mcp.CallToolParams{Name: "terminal", Arguments: map[string]any{
		"command": "echo first; while [ ! -e /tmp/mcp-gate ]; do sleep 0.05; done; echo second"}}
	params.SetProgressToken("p1")
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(ctx, params)
		done <- answer{res, err}
	}()
	select {
	case <-first:
	case a := <-done:
		t.Fatalf("the call ended (%v) before a progress notification carried its first line", a.err)
	case <-ctx.Done():
		t.Fatal("no progress notification with the first line")
	}
	if res, err := sess.Environment().Exec(ctx, backend.Request{Command: "touch /tmp/mcp-gate"}); err != nil || res.ExitCode != 0 {
		t.Fatalf("open the gate: %+v %v", res, err)
	}
	a := <-done
	must(t, a.err)
	if r := decode(t, a.res); r.err || !strings.Contains(r.text, "second") {
		t.Fatalf("result %+v", r)
	}
}
