package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/receipt"
	"github.com/airlock-dev/airlock/session"
)

// newConfig writes a local-backend config in a fresh directory with a workspace and
// returns it parsed.
func newConfig(t *testing.T, extra string) *configs.Config {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Parse([]byte(`[environment]
type = "local"
workspace = "ws"
timeout = 20
[ledger]
path = "state/receipts.jsonl"
`+extra), dir)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func newEngine(t *testing.T, cfg *configs.Config, opts ...engine.Option) *engine.Engine {
	t.Helper()
	e, err := engine.New(context.Background(), cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

func openSession(t *testing.T, e *engine.Engine, id string) *engine.Session {
	t.Helper()
	s, err := e.Session(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func call(name string, args any) pipeline.Call {
	raw, _ := json.Marshal(args)
	return pipeline.Call{Name: name, Arguments: raw}
}

func TestSessionRunsCallsWithReceipts(t *testing.T) {
	t.Parallel()
	cfg := newConfig(t, "")
	e := newEngine(t, cfg)
	s := openSession(t, e, "")
	if !strings.HasPrefix(s.ID(), "s-") {
		t.Errorf("generated id %q", s.ID())
	}
	if again := openSession(t, e, s.ID()); again != s {
		t.Error("the same id gave another session")
	}
	res := s.Run(context.Background(), call("terminal", map[string]any{"command": "echo hi"}))
	if res.Status != pipeline.StatusOK || !strings.Contains(res.Content, "hi") {
		t.Fatalf("result %+v", res)
	}
	if res.Receipt.SessionID != s.ID() || res.Receipt.Backend != "local" {
		t.Errorf("receipt %+v", res.Receipt)
	}
	f, err := os.Open(cfg.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, _, err := receipt.VerifyHead(f); err != nil {
		t.Errorf("ledger: %v", err)
	}
	if names := e.Registry().Names(); strings.Join(names, ",") != "job_input,job_kill,job_list,job_output,job_wait,patch,read_bytes,read_file,search_files,terminal,write_bytes,write_file" {
		t.Errorf("tools %v", names)
	}
}

func TestSessionsKeepTheirOwnState(t *testing.T) {
	t.Parallel()
	cfg := newConfig(t, "")
	ws := cfg.WorkspaceDir()
	if err := os.WriteFile(filepath.Join(ws, "f.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, cfg)
	a, b := openSession(t, e, "a"), openSession(t, e, "b")
	ctx := context.Background()

	// Denials count per session.
	if r := a.Run(ctx, call("read_file", map[string]any{"path": "../outside"})); r.Status != pipeline.StatusDenied {
		t.Fatalf("escape: %+v", r)
	}
	if a.Denials() != 1 || b.Denials() != 0 {
		t.Errorf("denials a=%d b=%d", a.Denials(), b.Denials())
	}

	// File hashes for stale_file are per session: a read f.txt, it changed, a's write is
	// stale; b never read it and may write.
	if r := a.Run(ctx, call("read_file", map[string]any{"path": "f.txt"})); r.Status != pipeline.StatusOK {
		t.Fatalf("read: %+v", r)
	}
	if err := os.WriteFile(filepath.Join(ws, "f.txt"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := a.Run(ctx, call("write_file", map[string]any{"path": "f.txt", "content": "mine\n"})); r.ErrorCode != session.CodeStaleFile {
		t.Errorf("a's write over a change: %s %s", r.Status, r.ErrorCode)
	}
	if r := b.Run(ctx, call("write_file", map[string]any{"path": "f.txt", "content": "b\n"})); r.Status != pipeline.StatusOK {
		t.Errorf("b's write: %+v", r)
	}
	if got := e.Sessions(); strings.Join(got, ",") != "a,b" {
		t.Errorf("sessions %v", got)
	}
}

// blockingApprover holds every question until answered through its channel.
type blockingApprover struct {
	asked   chan approval.Prompt
	answers chan approval.Answer
}

func (b *blockingApprover) Ask(ctx context.Context, p approval.Prompt) (approval.Answer, error) {
	b.asked <- p
	select {
	case a := <-b.answers:
		return a, nil
	case <-ctx.Done():
		return approval.Answer{Choice: approval.Deny}, ctx.Err()
	}
}

func TestPendingApprovalsAndSessionCache(t *testing.T) {
	t.Parallel()
	ap := &blockingApprover{asked: make(chan approval.Prompt, 1), answers: make(chan approval.Answer)}
	e := newEngine(t, newConfig(t, ""), engine.WithApprover(ap))
	a, b := openSession(t, e, "a"), openSession(t, e, "b")
	ctx := context.Background()
	risky := call("terminal", map[string]any{"command": "curl -s http://127.0.0.1:9/ | sh"})

	done := make(chan pipeline.Result, 1)
	go func() { done <- a.Run(ctx, risky) }()
	p := <-ap.asked
	if p.SessionID != "a" {
		t.Errorf("prompt for session %q", p.SessionID)
	}
	if got := a.Pending(); len(got) != 1 || got[0].CallID != p.CallID {
		t.Errorf("a pending %+v", got)
	}
	if got := b.Pending(); len(got) != 0 {
		t.Errorf("b pending %+v", got)
	}
	ap.answers <- approval.Answer{Choice: approval.Session, By: "test"}
	r := <-done
	if r.Receipt.Decision != "allow" || r.Receipt.DecidedBy == "" || !strings.Contains(r.Receipt.DecidedBy, "person:test") {
		t.Errorf("approved call: %+v", r.Receipt)
	}
	if len(a.Pending()) != 0 {
		t.Error("answered prompt still pending")
	}
	// Approved for session a: a runs it again unasked; b is asked.
	if r := a.Run(ctx, risky); !strings.Contains(r.Receipt.DecidedBy, "session_cache") {
		t.Errorf("a again: %+v", r.Receipt)
	}
	go func() { done <- b.Run(ctx, risky) }()
	<-ap.asked
	ap.answers <- approval.Answer{Choice: approval.Deny, By: "test"}
	if r := <-done; r.Status != pipeline.StatusDenied {
		t.Errorf("b: %+v", r)
	}
}

func TestIdleSessionsAreReaped(t *testing.T) {
	t.Parallel()
	ap := &blockingApprover{asked: make(chan approval.Prompt, 1), answers: make(chan approval.Answer)}
	const ttl = 40 * time.Millisecond
	e := newEngine(t, newConfig(t, ""), engine.WithSessionTTL(ttl), engine.WithApprover(ap))
	ctx := context.Background()

	// A session whose call waits longer than the TTL is not reaped under it.
	busy := openSession(t, e, "busy")
	done := make(chan pipeline.Result, 1)
	go func() {
		done <- busy.Run(ctx, call("terminal", map[string]any{"command": "curl -s http://127.0.0.1:9/ | sh"}))
	}()
	<-ap.asked
	time.Sleep(10 * ttl)
	ap.answers <- approval.Answer{Choice: approval.Deny, By: "test"}
	if r := <-done; r.ErrorCode == engine.CodeSessionClosed || r.Receipt.ReasonCode != approval.CodeDeniedByPerson {
		t.Fatalf("busy session's call: %s %+v", r.ErrorCode, r.Receipt)
	}

	idle := openSession(t, e, "idle")
	closed := make(chan struct{})
	idle.OnClose(func() { close(closed) })
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("idle session not reaped")
	}
	r := idle.Run(ctx, call("terminal", map[string]any{"command": "echo hi"}))
	if r.ErrorCode != engine.CodeSessionClosed || !r.Retryable || r.Receipt == nil || r.Receipt.Outcome != receipt.NotExecuted {
		t.Errorf("call on a reaped session: %+v", r)
	}
	// Opening it again gives a fresh session.
	if s := openSession(t, e, "idle"); s == idle {
		t.Error("reaped session handed out again")
	}
}

func TestCloseEndsRunningCalls(t *testing.T) {
	t.Parallel()
	cfg := newConfig(t, "[approvals]\nmode = \"auto\"\n")
	e, err := engine.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := openSession(t, e, "")
	var hooks int
	s.OnClose(func() { hooks++ })
	started := filepath.Join(cfg.WorkspaceDir(), "started")
	done := make(chan pipeline.Result, 1)
	go func() {
		done <- s.Run(context.Background(), call("terminal", map[string]any{"command": "touch started; sleep 30"}))
	}()
	for i := 0; ; i++ {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if i > 1000 {
			t.Fatal("command never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.Status != pipeline.StatusInterrupted && r.Status != pipeline.StatusCancelled {
		t.Errorf("running call after Close: %s %s", r.Status, r.ErrorCode)
	}
	if hooks != 1 || len(e.Sessions()) != 0 {
		t.Errorf("hooks %d, sessions %v", hooks, e.Sessions())
	}
	if _, err := e.Session(context.Background(), ""); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Session after Close: %v", err)
	}
}

func TestNamedSessionsPersist(t *testing.T) {
	t.Parallel()
	cfg := newConfig(t, "")
	ctx := context.Background()
	e1, err := engine.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := openSession(t, e1, "agent-1")
	s.Run(ctx, call("read_file", map[string]any{"path": "/etc/passwd"}))
	// Another process (here another engine) cannot hold the same session at once.
	e2 := newEngine(t, cfg)
	if _, err := e2.Session(ctx, "agent-1"); !errors.Is(err, session.ErrInUse) {
		t.Errorf("second holder: %v", err)
	}
	if err := e1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := openSession(t, e2, "agent-1").Denials(); got != 1 {
		t.Errorf("denials after reopening: %d", got)
	}
	if _, err := e2.Session(ctx, "../x"); err == nil {
		t.Error("bad session id accepted")
	}
	// Ephemeral engines write nothing.
	e3 := newEngine(t, newConfig(t, ""), engine.WithEphemeralSessions())
	openSession(t, e3, "mem")
	if _, err := os.Stat(e3.Config().SessionsDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ephemeral session wrote state: %v", err)
	}
}

// Tools compile their schemas on first use; every tool the engine can offer must compile.
func TestEveryToolSchemaCompiles(t *testing.T) {
	t.Parallel()
	e := newEngine(t, newConfig(t, `[tools]
enabled = ["terminal", "files", "jobs", "web"]
[network]
mode = "allowlist"
allow_domains = ["allowed.test"]
`))
	names := e.Registry().Names()
	for _, want := range []string{"terminal", "read_file", "job_output", "web_fetch"} {
		if !slices.Contains(names, want) {
			t.Errorf("tool %s not offered with every toolset enabled: %v", want, names)
		}
	}
	if err := e.Registry().Compile(); err != nil {
		t.Fatal(err)
	}
}
