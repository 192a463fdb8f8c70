package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/pending"
	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/pipeline"
)

// ApproverOptions configure an [Approver].
type ApproverOptions struct {
	// TTL is how long a question stays open before it expires as a denial; zero means 10
	// minutes.
	TTL time.Duration
	// ElicitWait is how long a call waits for an answer through elicitation/create before
	// returning approval_pending; zero means 40 s, below the clients' 60 s tool timeout.
	ElicitWait time.Duration
	Logger     hclog.Logger
}

// Approver is the approval.Approver of an MCP server: it writes each question to the
// pending store, asks the person through the client where the client can elicit, and
// answers the gate with whatever answer arrives first — the client's or `airlock approvals`
// from another terminal. With no answer in time it returns an [approval.PendingError], so
// the call comes back at once as approval_pending; the same call again, or approval_wait,
// finds the answer in the store later. Each answer is used once.
type Approver struct {
	store *pending.Store
	opts  ApproverOptions
	log   hclog.Logger
}

var _ approval.Approver = (*Approver)(nil)

// NewApprover returns an approver over store.
func NewApprover(store *pending.Store, opts ApproverOptions) *Approver {
	if opts.TTL <= 0 {
		opts.TTL = 10 * time.Minute
	}
	if opts.ElicitWait <= 0 {
		opts.ElicitWait = 40 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	return &Approver{store: store, opts: opts, log: opts.Logger.Named("mcp-approval")}
}

// Store returns the pending store.
func (a *Approver) Store() *pending.Store { return a.store }

// callInfo is what the approver needs to know of the MCP call it is asked about; the
// server puts it in the call's context.
type callInfo struct {
	ss        *mcp.ServerSession
	env       backend.Environment
	tool      string
	args      json.RawMessage
	argsHash  string
	canElicit bool
	mrtr      bool // the client elicits on its own turn: return input requests
	noElicit  bool

	mu      sync.Mutex
	pending string
	input   *pending.Record
}

type callInfoKey struct{}

func withCallInfo(ctx context.Context, ci *callInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, ci)
}

func callInfoFrom(ctx context.Context) *callInfo {
	ci, _ := ctx.Value(callInfoKey{}).(*callInfo)
	return ci
}

func (ci *callInfo) pendingID() string {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	return ci.pending
}

func (ci *callInfo) needsInput() *pending.Record {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	return ci.input
}

// protocolMRTR is the first protocol version in which the server may not send
// elicitation/create during a call and returns input requests instead.
const protocolMRTR = "2026-07-28"

func (s *Server) newCallInfo(req *mcp.CallToolRequest, name string, args json.RawMessage) *callInfo {
	ci := &callInfo{ss: req.Session, env: s.opts.Session.Environment(), tool: name, args: args, argsHash: hashArgs(args)}
	if ip := req.Session.InitializeParams(); ip != nil {
		ci.canElicit = ip.Capabilities != nil && ip.Capabilities.Elicitation != nil && !s.opts.NoElicitation
		ci.mrtr = ip.ProtocolVersion >= protocolMRTR
	}
	return ci
}

// Ask answers the gate for one call that needs a person.
func (a *Approver) Ask(ctx context.Context, p approval.Prompt) (approval.Answer, error) {
	ci := callInfoFrom(ctx)
	if ci == nil {
		return approval.Answer{}, approval.ErrNoApprover
	}
	rec, found, err := a.store.FindForCall(p.SessionID, ci.tool, ci.argsHash)
	if err != nil {
		return approval.Answer{}, fmt.Errorf("mcp approval: %w", err)
	}
	if found && rec.State == pending.Approved && rec.DecidedAt != nil && time.Since(*rec.DecidedAt) > a.opts.TTL {
		// An approval unused for longer than a question may wait is not applied this late
		// to a call that may mean something else by now: it is retired and asked again.
		_, _ = a.store.Consume(rec.ID)
		found = false
	}
	if found && rec.State != pending.Pending {
		return a.consume(rec.ID)
	}
	if !found {
		rec = a.newRecord(ctx, p, ci)
		if err := a.store.Create(&rec); err != nil {
			return approval.Answer{}, fmt.Errorf("mcp approval: %w", err)
		}
		a.log.Info("approval pending", "approval_id", rec.ID, "call_id", p.CallID, "tool", ci.tool)
	}
	ci.mu.Lock()
	ci.pending = rec.ID
	ci.mu.Unlock()
	switch {
	case ci.noElicit || !ci.canElicit:
		return approval.Answer{}, a.pendingErr(rec)
	case ci.mrtr:
		ci.mu.Lock()
		ci.input = &rec
		ci.mu.Unlock()
		return approval.Answer{}, a.pendingErr(rec)
	}
	return a.elicit(ctx, ci, rec)
}

func (a *Approver) pendingErr(rec pending.Record) error {
	return &approval.PendingError{ID: rec.ID, Next: fmt.Sprintf(
		"call %s with approval_id %q, or repeat the call, to get the result once a person answers (expires %s)",
		ApprovalWaitTool, rec.ID, rec.ExpiresAt.Format(time.RFC3339))}
}

// elicit asks through elicitation/create and watches the store at once, for at most
// ElicitWait; whichever answers first decides.
func (a *Approver) elicit(ctx context.Context, ci *callInfo, rec pending.Record) (approval.Answer, error) {
	ectx, cancel := context.WithTimeout(ctx, a.opts.ElicitWait)
	defer cancel()
	type elicited struct {
		res *mcp.ElicitResult
		err error
	}
	ech := make(chan elicited, 1)
	go func() {
		r, err := ci.ss.Elicit(ectx, elicitParams(rec))
		ech <- elicited{r, err}
	}()
	sch := make(chan struct{}, 1)
	go func() {
		if r, err := a.store.Wait(ectx, rec.ID, 100*time.Millisecond); err == nil && r.State != pending.Pending {
			sch <- struct{}{}
		}
	}()
	select {
	case e := <-ech:
		if e.err != nil {
			a.log.Debug("elicitation ended without an answer", "approval_id", rec.ID, "error", e.err)
		} else if d, ok := decisionOf(e.res); ok {
			if _, err := a.store.Decide(rec.ID, d.approve, d.scope, "elicitation", d.message); err != nil && !errors.Is(err, pending.ErrDecided) {
				return approval.Answer{}, fmt.Errorf("mcp approval: %w", err)
			}
		}
	case <-sch:
	case <-ectx.Done():
	}
	cancel()
	if ctx.Err() != nil {
		return approval.Answer{}, fmt.Errorf("mcp approval: %w", ctx.Err())
	}
	cur, err := a.store.Get(rec.ID)
	if err != nil {
		return approval.Answer{}, fmt.Errorf("mcp approval: %w", err)
	}
	if cur.State == pending.Pending {
		return approval.Answer{}, a.pendingErr(cur)
	}
	return a.consume(cur.ID)
}

// consume applies an answered record to this call, once.
func (a *Approver) consume(id string) (approval.Answer, error) {
	r, err := a.store.Consume(id)
	if err != nil {
		return approval.Answer{}, fmt.Errorf("mcp approval: %w", err)
	}
	switch r.State {
	case pending.Approved:
		ch := approval.Once
		if r.Scope == pending.Session {
			ch = approval.Session
		}
		return approval.Answer{Choice: ch, By: r.DecidedBy}, nil
	case pending.Denied:
		return approval.Answer{Choice: approval.Deny, By: r.DecidedBy, Message: r.Message}, nil
	case pending.Expired:
		return approval.Answer{}, approval.ErrExpired
	}
	return approval.Answer{}, a.pendingErr(r)
}

// applyInputResponse records the answer a multi-round-trip retry carries. It returns a
// result to send instead of running the call when there is nothing to run yet.
func (s *Server) applyInputResponse(ci *callInfo, req *mcp.CallToolRequest) *mcp.CallToolResult {
	store := s.opts.Approver.store
	rec, err := store.Get(req.Params.RequestState)
	if err != nil || rec.SessionID != s.opts.Session.ID() || rec.Tool != ci.tool || rec.ArgumentsSHA256 != ci.argsHash {
		// Request state comes from the client: it must name this very call's open approval.
		return refusal("approval_not_found", "the retry names no open approval of this call in this session", true)
	}
	er, _ := req.Params.InputResponses[approvalInput].(*mcp.ElicitResult)
	d, ok := decisionOf(er)
	if !ok {
		ci.mu.Lock()
		ci.pending = rec.ID
		ci.mu.Unlock()
		return pendingResult(pendingPlaceholder(rec), rec.ID)
	}
	if _, err := store.Decide(rec.ID, d.approve, d.scope, "elicitation", d.message); err != nil && !errors.Is(err, pending.ErrDecided) {
		return refusal("approval_error", err.Error(), true)
	}
	ci.noElicit = true
	return nil
}

const approvalInput = "airlock_approval"

type decision struct {
	approve bool
	scope   pending.Scope
	message string
}

// decisionOf reads the person's answer from an elicitation result: accept with a
// decision, or decline (a denial). Cancel, or an accept without a decision, is no answer.
func decisionOf(r *mcp.ElicitResult) (decision, bool) {
	if r == nil {
		return decision{}, false
	}
	msg, _ := r.Content["message"].(string)
	switch r.Action {
	case "decline":
		return decision{message: msg}, true
	case "accept":
		switch r.Content["decision"] {
		case "approve_once":
			return decision{approve: true, scope: pending.Once}, true
		case "approve_session":
			return decision{approve: true, scope: pending.Session}, true
		case "deny":
			return decision{message: msg}, true
		}
	}
	return decision{}, false
}

const elicitSchema = `{
  "type": "object",
  "properties": {
    "decision": {"type": "string", "title": "Decision", "enum": ["approve_once", "approve_session", "deny"],
      "description": "approve_once runs this call; approve_session also runs this exact command again this session; deny refuses it"},
    "message": {"type": "string", "title": "Message to the agent", "description": "Said to the agent with a denial"}
  },
  "required": ["decision"]
}`

// elicitParams is the question a person sees in the client.
func elicitParams(rec pending.Record) *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: describe(rec), RequestedSchema: json.RawMessage(elicitSchema)}
}

// describe renders an approval for a person: the call, where it runs, its risk and why,
// and for a write the change.
func describe(rec pending.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Airlock: approve this %s call? (approval %s)\n\n", rec.Tool, rec.ID)
	fmt.Fprintf(&b, "%s\n\n", rec.Summary)
	if rec.Workdir != "" {
		fmt.Fprintf(&b, "workdir: %s\n", rec.Workdir)
	}
	fmt.Fprintf(&b, "backend: %s\nrisk:    %s\n", rec.Backend, rec.Risk)
	for _, r := range rec.Reasons {
		fmt.Fprintf(&b, "reason:  %s\n", r)
	}
	if rec.Diff != "" {
		fmt.Fprintf(&b, "\n%s", rec.Diff)
	}
	fmt.Fprintf(&b, "\nexpires: %s; or answer from a terminal: airlock approvals approve|deny %s\n", rec.ExpiresAt.Format(time.RFC3339), rec.ID)
	return b.String()
}

func (a *Approver) newRecord(ctx context.Context, p approval.Prompt, ci *callInfo) pending.Record {
	var args struct {
		Command   string `json:"command"`
		Workdir   string `json:"workdir"`
		Path      string `json:"path"`
		Content   string `json:"content"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
	}
	_ = json.Unmarshal(ci.args, &args)
	d := ci.env.Describe()
	rec := pending.Record{
		SessionID: p.SessionID, CallID: p.CallID, Tool: ci.tool, Arguments: ci.args, ArgumentsSHA256: ci.argsHash,
		Summary: p.Command, Workdir: args.Workdir, Backend: d.Kind, Risk: p.Risk.String(),
		ExpiresAt: time.Now().Add(a.opts.TTL).UTC(),
	}
	if rec.Workdir == "" {
		rec.Workdir = d.Workspace
	}
	for _, r := range p.Reasons {
		rec.Reasons = append(rec.Reasons, fmt.Sprintf("%s (%s) in %q", r.Code, r.Risk, r.Segment))
	}
	switch {
	case args.OldString != "" || args.NewString != "":
		rec.Diff = unifiedDiff(args.Path, args.OldString, args.NewString)
	case args.Path != "" && strings.Contains(ci.tool, "write"):
		rec.Diff = unifiedDiff(args.Path, currentContent(ctx, ci.env, args.Path), args.Content)
	}
	return rec
}

// currentContent reads the file a write would replace, for the person's diff: at most
// 256 KiB, and nothing when it does not exist yet.
func currentContent(ctx context.Context, env backend.Environment, path string) string {
	res, err := env.Exec(ctx, backend.Request{Argv: []string{"cat", "--", path}, Timeout: 10 * time.Second, MaxOutputBytes: 256 << 10})
	if err != nil || res.ExitCode != 0 || res.Truncated {
		return ""
	}
	return string(res.Stdout)
}

// pendingPlaceholder is the pipeline-shaped result of a call that was not run because its
// approval is still open.
func pendingPlaceholder(rec pending.Record) pipeline.Result {
	return pipeline.Result{CallID: rec.CallID, ToolName: rec.Tool, Status: pipeline.StatusDenied, ErrorCode: StatusApprovalPending,
		ErrorMessage: "waiting for a person's approval"}
}
