package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/pending"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/receipt"
)

// Waiting for a person belongs to the runtime, whichever front end asked: each question is
// written to the approvals store (beside the ledger, one of Airlock's own files), put to a
// person through the front end's [approval.Asker] where it has one, and answered by whatever
// answer arrives first — the asker's, or `airlock approvals` from another terminal. With no
// answer in time the call comes back at once with code approval_pending and the question's
// ID on the result; the same call again, or [Session.AwaitApproval], finds the answer later.
// Each answer is used once, and a question expires unanswered as a denial.

// Codes of a wait for an approval that cannot be had.
const (
	CodeApprovalNotFound = "approval_not_found"
	CodeApprovalUsed     = "approval_used"
	CodeApprovalError    = "approval_error"
)

// Default waits of [WithPendingApprovals].
const (
	DefaultApprovalTTL = approval.DefaultTTL
	DefaultAskWait     = approval.DefaultAskWait
)

// WithPendingApprovals makes the runtime the one that waits for a person: questions go to
// the approvals store in the config's state ([configs.Config.ApprovalsDir]) and expire
// unanswered after ttl (zero: [DefaultApprovalTTL]). Front ends ask through
// [approval.WithAsker]. It replaces [WithApprover].
func WithPendingApprovals(ttl time.Duration) Option {
	return func(o *options) error {
		if ttl <= 0 {
			ttl = DefaultApprovalTTL
		}
		o.pendingTTL = ttl
		return nil
	}
}

// approvals is the approval.Approver of a runtime that keeps its questions in the store.
type approvals struct {
	store *pending.Store
	ttl   time.Duration
	log   hclog.Logger
}

var _ approval.Approver = (*approvals)(nil)

// openApprovals opens the store and drops what was answered or expired a day ago.
func openApprovals(dir string, ttl time.Duration, log hclog.Logger) (*approvals, error) {
	store, err := pending.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := store.Sweep(24 * time.Hour); err != nil {
		log.Warn("approvals sweep failed", "error", err)
	}
	return &approvals{store: store, ttl: ttl, log: log.Named("approvals")}, nil
}

// Ask answers the gate for one call that needs a person.
func (a *approvals) Ask(ctx context.Context, p approval.Prompt) (approval.Answer, error) {
	argsHash := receipt.HashArguments(p.Arguments)
	rec, found, err := a.store.FindForCall(p.SessionID, p.Tool, argsHash)
	if err != nil {
		return approval.Answer{}, fmt.Errorf("approvals: %w", err)
	}
	if found && rec.State == pending.Approved && rec.DecidedAt != nil && time.Since(*rec.DecidedAt) > a.ttl {
		// An approval unused for longer than a question may wait is not applied this late
		// to a call that may mean something else by now: it is retired and asked again.
		_, _ = a.store.Consume(rec.ID)
		found = false
	}
	if found && rec.State != pending.Pending {
		return a.consume(rec.ID)
	}
	if !found {
		rec = a.newRecord(p, argsHash)
		if err := a.store.Create(&rec); err != nil {
			return approval.Answer{}, fmt.Errorf("approvals: %w", err)
		}
		a.log.Info("approval pending", "approval_id", rec.ID, "call_id", p.CallID, "tool", p.Tool)
	}
	asker, wait := approval.AskerFrom(ctx)
	if asker == nil {
		return approval.Answer{}, a.pendingErr(rec)
	}
	return a.ask(ctx, asker, wait, rec)
}

// ask puts the question through the front end's asker and watches the store at once, for
// at most wait; whichever answers first decides.
func (a *approvals) ask(ctx context.Context, asker approval.Asker, wait time.Duration, rec pending.Record) (approval.Answer, error) {
	if wait <= 0 {
		wait = DefaultAskWait
	}
	actx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	type asked struct {
		ans approval.Answer
		ok  bool
	}
	ach := make(chan asked, 1)
	go func() {
		ans, ok := asker.Ask(actx, rec)
		ach <- asked{ans, ok}
	}()
	sch := make(chan struct{}, 1)
	go func() {
		if r, err := a.store.Wait(actx, rec.ID, 100*time.Millisecond); err == nil && r.State != pending.Pending {
			sch <- struct{}{}
		}
	}()
	select {
	case r := <-ach:
		if r.ok {
			if err := a.record(rec.ID, r.ans); err != nil {
				return approval.Answer{}, err
			}
		}
	case <-sch:
	case <-actx.Done():
	}
	cancel()
	if ctx.Err() != nil {
		return approval.Answer{}, fmt.Errorf("approvals: %w", ctx.Err())
	}
	cur, err := a.store.Get(rec.ID)
	if err != nil {
		return approval.Answer{}, fmt.Errorf("approvals: %w", err)
	}
	if cur.State == pending.Pending {
		return approval.Answer{}, a.pendingErr(cur)
	}
	return a.consume(cur.ID)
}

// record writes a person's answer; an approval answered meanwhile keeps its first answer.
func (a *approvals) record(id string, ans approval.Answer) error {
	scope := pending.Once
	if ans.Choice == approval.Session {
		scope = pending.Session
	}
	approve := ans.Choice == approval.Once || ans.Choice == approval.Session
	if _, err := a.store.Decide(id, approve, scope, ans.By, ans.Message); err != nil && !errors.Is(err, pending.ErrDecided) {
		return fmt.Errorf("approvals: %w", err)
	}
	return nil
}

func (a *approvals) pendingErr(rec pending.Record) error {
	return &approval.PendingError{ID: rec.ID, Next: fmt.Sprintf(
		"wait for it (approval_wait with approval_id %q), or repeat the call, to get the result once a person answers (expires %s)",
		rec.ID, rec.ExpiresAt.Format(time.RFC3339))}
}

// consume applies an answered record to this call, once.
func (a *approvals) consume(id string) (approval.Answer, error) {
	r, err := a.store.Consume(id)
	if err != nil {
		return approval.Answer{}, fmt.Errorf("approvals: %w", err)
	}
	switch r.State {
	case pending.Approved:
		ch := approval.Once
		if r.Scope == pending.Session {
			ch = approval.Session
		}
		return approval.Answer{Choice: ch, By: r.DecidedBy, Shown: r.Preview}, nil
	case pending.Denied:
		return approval.Answer{Choice: approval.Deny, By: r.DecidedBy, Message: r.Message}, nil
	case pending.Expired:
		return approval.Answer{}, approval.ErrExpired
	}
	return approval.Answer{}, a.pendingErr(r)
}

// newRecord is the question as the store keeps it: everything the prompt shows a person.
func (a *approvals) newRecord(p approval.Prompt, argsHash string) pending.Record {
	rec := pending.Record{
		SessionID: p.SessionID, CallID: p.CallID, Tool: p.Tool, Arguments: p.Arguments, ArgumentsSHA256: argsHash,
		Summary: summary(p), Workdir: p.Workdir, Backend: p.Backend, Risk: p.Risk.String(),
		Preview: p.Preview, SessionCovers: p.Session,
		ExpiresAt: time.Now().Add(a.ttl).UTC(),
	}
	for _, f := range p.Fields {
		rec.Fields = append(rec.Fields, pending.Field{Name: f.Name, Value: f.Value})
	}
	for _, r := range p.Reasons {
		rec.Reasons = append(rec.Reasons, fmt.Sprintf("%s (%s) in %q", r.Code, r.Risk, r.Segment))
	}
	return rec
}

// summary is the call on one line, for a list: the command, or the declared fields.
func summary(p approval.Prompt) string {
	if p.Command != "" && len(p.Fields) > 0 && p.Fields[0].Value == p.Command {
		return p.Command
	}
	parts := make([]string, 0, len(p.Fields))
	for _, f := range p.Fields {
		parts = append(parts, f.Name+"="+f.Value)
	}
	if len(parts) == 0 {
		return p.Command
	}
	return strings.Join(parts, " ")
}

// AwaitApproval waits at most wait for a person's answer to the session's approval id.
// Once answered it returns the call the approval was asked for, to be run again through the
// whole road (the gate finds the answer there and uses it once, and the receipt records who
// gave it); otherwise it returns the result to give instead: still pending, not found in
// this session, already used.
func (s *Session) AwaitApproval(ctx context.Context, id string, wait time.Duration) (pipeline.Call, *pipeline.Result) {
	ap := s.e.approvals
	if ap == nil {
		return pipeline.Call{}, awaitRefusal(CodeApprovalNotFound, "this runtime keeps no approvals", false)
	}
	rec, err := ap.store.Get(id)
	if err != nil || rec.SessionID != s.id {
		return pipeline.Call{}, awaitRefusal(CodeApprovalNotFound, fmt.Sprintf("no approval %q in this session", id), true)
	}
	if rec.Consumed {
		return pipeline.Call{}, awaitRefusal(CodeApprovalUsed, fmt.Sprintf("approval %s was already applied to a call; its result was returned then", id), false)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	rec, err = ap.store.Wait(wctx, id, 100*time.Millisecond)
	cancel()
	switch {
	case ctx.Err() != nil:
		return pipeline.Call{}, awaitRefusal(pipeline.CodeCancelled, "the wait was cancelled; the approval is still open", true)
	case err != nil && !errors.Is(err, context.DeadlineExceeded):
		return pipeline.Call{}, awaitRefusal(CodeApprovalError, err.Error(), true)
	case rec.State == pending.Pending:
		msg := fmt.Sprintf("approval %s is still unanswered (expires %s)", rec.ID, rec.ExpiresAt.Format(time.RFC3339))
		return pipeline.Call{}, &pipeline.Result{ToolName: rec.Tool, Status: pipeline.StatusDenied, ErrorCode: pipeline.CodeApprovalPending,
			ErrorMessage: msg, Content: msg, Retryable: true, ApprovalID: rec.ID}
	}
	return pipeline.Call{Name: rec.Tool, Arguments: rec.Arguments}, nil
}

// AnswerApproval records a person's answer, given through the front end on its own turn
// (a multi-round-trip elicitation), to the session's approval id of the call c. The id
// comes back from the client: it must name this very call's question in this session.
func (s *Session) AnswerApproval(id string, c pipeline.Call, ans approval.Answer) error {
	ap := s.e.approvals
	if ap == nil {
		return fmt.Errorf("approval %q: %w", id, pending.ErrNotFound)
	}
	rec, err := ap.store.Get(id)
	if err != nil || rec.SessionID != s.id || rec.Tool != c.Name || rec.ArgumentsSHA256 != receipt.HashArguments(c.Arguments) {
		return fmt.Errorf("approval %q of this call in this session: %w", id, pending.ErrNotFound)
	}
	return ap.record(id, ans)
}

// Approval returns the session's approval id as a person reads it.
func (s *Session) Approval(id string) (pending.Record, error) {
	ap := s.e.approvals
	if ap == nil {
		return pending.Record{}, fmt.Errorf("approval %q: %w", id, pending.ErrNotFound)
	}
	rec, err := ap.store.Get(id)
	if err == nil && rec.SessionID != s.id {
		err = fmt.Errorf("approval %q: %w", id, pending.ErrNotFound)
	}
	return rec, err
}

func awaitRefusal(code, msg string, retryable bool) *pipeline.Result {
	return &pipeline.Result{Status: pipeline.StatusFailed, ErrorCode: code, ErrorMessage: msg, Content: msg, Retryable: retryable}
}

// Approvals returns the runtime's approvals store, for a front end that lets a person list
// and answer the questions (`airlock serve`'s approvals API); nil unless
// [WithPendingApprovals].
func (e *Engine) Approvals() *pending.Store {
	if e.approvals == nil {
		return nil
	}
	return e.approvals.store
}
