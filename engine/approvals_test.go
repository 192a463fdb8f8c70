package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/pending"
	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/pipeline"
)

// Waiting for a person is the runtime's, whatever the front end: a call that needs one comes
// back approval_pending with the question's ID on the result, the record in the store holds
// what the person must see (a write's diff built through the file tools' road), and the
// answer, given from another process, lets the same call run once.
func TestRuntimeWaitsForAPerson(t *testing.T) {
	t.Parallel()
	cfg := newConfig(t, "[approvals]\nallow_write = false\n")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(cfg.WorkspaceDir(), "notes.txt"), []byte("keep\nold\n"), 0o644))
	e := newEngine(t, cfg, engine.WithPendingApprovals(time.Minute))
	s := openSession(t, e, "")
	ctx := context.Background()
	w := call("write_file", map[string]any{"path": "notes.txt", "content": "keep\nnew\n"})
	res := s.Run(ctx, w)
	if res.ErrorCode != pipeline.CodeApprovalPending || res.ApprovalID == "" {
		t.Fatalf("pending: %+v", res)
	}
	store, err := pending.Open(cfg.ApprovalsDir())
	must(err)
	rec, err := store.Get(res.ApprovalID)
	must(err)
	if !strings.Contains(rec.Preview, "-old\n+new\n") || rec.Tool != "write_file" || !strings.Contains(rec.SessionCovers, "same content") {
		t.Fatalf("record: %+v", rec)
	}
	// Nobody answered yet: waiting gives the same question back.
	if _, r := s.AwaitApproval(ctx, res.ApprovalID, 100*time.Millisecond); r == nil || r.ApprovalID != res.ApprovalID {
		t.Fatalf("still pending: %+v", r)
	}
	_, err = store.Decide(res.ApprovalID, true, pending.Once, "cli", "")
	must(err)
	c, r := s.AwaitApproval(ctx, res.ApprovalID, time.Second)
	if r != nil || c.Name != "write_file" {
		t.Fatalf("answered: %+v %+v", c, r)
	}
	if res = s.Run(ctx, c); res.Status != pipeline.StatusOK || !strings.Contains(res.Receipt.DecidedBy, "person:cli") {
		t.Fatalf("approved run: %+v", res)
	}
	// Used once: the same write again is a new question.
	if res = s.Run(ctx, w); res.ErrorCode != pipeline.CodeApprovalPending || res.ApprovalID == rec.ID {
		t.Fatalf("second run: %+v", res)
	}
	// Another session cannot wait on, or answer, this session's question.
	other := openSession(t, e, "")
	if _, r := other.AwaitApproval(ctx, res.ApprovalID, 10*time.Millisecond); r == nil || r.ErrorCode != engine.CodeApprovalNotFound {
		t.Fatalf("other session waited: %+v", r)
	}
	if err := other.AnswerApproval(res.ApprovalID, w, approval.Answer{Choice: approval.Once, By: "elicitation"}); err == nil {
		t.Fatal("other session answered")
	}
}

// Airlock's own files are one list, the approvals store in it, and every wall uses it.
func TestOwnFilesNameTheApprovalsStore(t *testing.T) {
	t.Parallel()
	cfg := newConfig(t, "")
	own := cfg.OwnFiles()
	for _, want := range []string{cfg.LedgerPath(), cfg.SessionsDir(), cfg.ApprovalsDir(), cfg.StateDir()} {
		if !slices.Contains(own, want) {
			t.Errorf("own files %q lack %s", own, want)
		}
	}
}
