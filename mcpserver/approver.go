package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/pending"
	"github.com/airlock-dev/airlock/pipeline"
)

// The runtime waits for a person (package engine: the approvals store, the record, expiry,
// the preview); the MCP server is one way to ask: elicitation. A client that elicits during
// a call is asked there; one on protocol 2026-07-28 or later, which elicits on its own turn,
// gets the question back as an input request and retries the call with the answer; a
// client that cannot elicit gets approval_pending at once and a person answers with
// `airlock approvals` from another terminal.

// callInfo is what the server knows of the MCP call it asks about.
type callInfo struct {
	ss        *mcp.ServerSession
	tool      string
	args      json.RawMessage
	canElicit bool
	mrtr      bool // the client elicits on its own turn: return input requests
	noElicit  bool

	mu    sync.Mutex
	input *pending.Record
}

type callInfoKey struct{}

func withCallInfo(ctx context.Context, ci *callInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, ci)
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
	ci := &callInfo{ss: req.Session, tool: name, args: args}
	if ip := req.Session.InitializeParams(); ip != nil {
		ci.canElicit = ip.Capabilities != nil && ip.Capabilities.Elicitation != nil && !s.opts.NoElicitation
		ci.mrtr = ip.ProtocolVersion >= protocolMRTR
	}
	return ci
}

// asking gives the runtime this call's way to ask a person, where the client has one.
func (s *Server) asking(ctx context.Context, ci *callInfo) context.Context {
	if ci.noElicit || !ci.canElicit {
		return ctx
	}
	return approval.WithAsker(ctx, ci, s.opts.ElicitWait)
}

// Ask puts the question to the person through the client: at once by elicitation/create,
// or, for a client that elicits on its own turn, by keeping it for the input request the
// call returns (no answer now).
func (ci *callInfo) Ask(ctx context.Context, rec pending.Record) (approval.Answer, bool) {
	if ci.mrtr {
		ci.mu.Lock()
		ci.input = &rec
		ci.mu.Unlock()
		return approval.Answer{}, false
	}
	res, err := ci.ss.Elicit(ctx, elicitParams(rec))
	if err != nil {
		return approval.Answer{}, false
	}
	return answerOf(res)
}

// applyInputResponse records the answer a multi-round-trip retry carries. It returns a
// result to send instead of running the call when there is nothing to run yet.
func (s *Server) applyInputResponse(ci *callInfo, req *mcp.CallToolRequest) *mcp.CallToolResult {
	id := req.Params.RequestState
	er, _ := req.Params.InputResponses[approvalInput].(*mcp.ElicitResult)
	ans, ok := answerOf(er)
	c := pipeline.Call{Name: ci.tool, Arguments: ci.args}
	ap := s.approvals()
	if !ok {
		// No answer: the question stays open; the request state must still name it.
		rec, err := ap.Approval(id)
		if err != nil || rec.Tool != ci.tool {
			return refusal("approval_not_found", "the retry names no open approval of this call in this session", true)
		}
		return pendingResult(pendingPlaceholder(rec), rec.ID)
	}
	// Request state comes from the client: the runtime checks it names this very call's
	// open approval in this session.
	if err := ap.AnswerApproval(id, c, ans); err != nil {
		return refusal("approval_not_found", "the retry names no open approval of this call in this session", true)
	}
	ci.noElicit = true
	return nil
}

const approvalInput = "airlock_approval"

// answerOf reads the person's answer from an elicitation result: accept with a decision,
// or decline (a denial). Cancel, or an accept without a decision, is no answer.
func answerOf(r *mcp.ElicitResult) (approval.Answer, bool) {
	if r == nil {
		return approval.Answer{}, false
	}
	msg, _ := r.Content["message"].(string)
	deny := approval.Answer{Choice: approval.Deny, By: "elicitation", Message: msg}
	switch r.Action {
	case "decline":
		return deny, true
	case "accept":
		switch r.Content["decision"] {
		case "approve_once":
			return approval.Answer{Choice: approval.Once, By: "elicitation"}, true
		case "approve_session":
			return approval.Answer{Choice: approval.Session, By: "elicitation"}, true
		case "deny":
			return deny, true
		}
	}
	return approval.Answer{}, false
}

// elicitParams is the question a person sees in the client: the record as [pending.Record.Text]
// renders it, every value from the agent escaped, and choices that say what each covers.
func elicitParams(rec pending.Record) *mcp.ElicitParams {
	covers := rec.SessionCovers
	if covers == "" {
		covers = "this exact call again"
	}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"decision": map[string]any{"type": "string", "title": "Decision", "enum": []string{"approve_once", "approve_session", "deny"},
				"description": "approve_once runs this call only; approve_session runs it and, for the rest of the session without asking, " +
					pending.Escape(covers) + "; deny refuses it"},
			"message": map[string]any{"type": "string", "title": "Message to the agent", "description": "Said to the agent with a denial"},
		},
		"required": []string{"decision"},
	}
	b, _ := json.Marshal(schema)
	return &mcp.ElicitParams{Message: rec.Text(), RequestedSchema: json.RawMessage(b)}
}

// pendingPlaceholder is the pipeline-shaped result of a call that was not run because its
// approval is still open.
func pendingPlaceholder(rec pending.Record) pipeline.Result {
	return pipeline.Result{CallID: rec.CallID, ToolName: rec.Tool, Status: pipeline.StatusDenied, ErrorCode: StatusApprovalPending,
		ErrorMessage: "waiting for a person's approval", ApprovalID: rec.ID}
}

// approvalWait waits for an approval's answer and then runs its call through the whole road
// again: the runtime finds the answer and the receipt records who gave it.
func (s *Server) approvalWait(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		ID      string   `json:"approval_id"`
		Timeout *float64 `json:"timeout"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &a); err != nil || a.ID == "" {
		return refusal("input_validation_failed", "arguments: approval_id (string) is required", true), nil
	}
	wait := s.opts.ApprovalWaitMax
	if a.Timeout != nil {
		wait = min(wait, time.Duration(*a.Timeout*float64(time.Second)))
	}
	c, res := s.approvals().AwaitApproval(ctx, a.ID, wait)
	switch {
	case res != nil && res.ErrorCode == pipeline.CodeApprovalPending:
		return pendingResult(*res, res.ApprovalID), nil
	case res != nil:
		return toMCP(*res), nil
	}
	ci := s.newCallInfo(req, c.Name, c.Arguments)
	ci.noElicit = true // the person has answered: never ask again for this run
	return s.run(ctx, req, ci), nil
}

// approvals is the session's approvals, or none (every approval is then not found).
func (s *Server) approvals() Approvals {
	if ap, ok := s.opts.Session.(Approvals); ok {
		return ap
	}
	return noApprovals{}
}

type noApprovals struct{}

func (noApprovals) AwaitApproval(context.Context, string, time.Duration) (pipeline.Call, *pipeline.Result) {
	return pipeline.Call{}, &pipeline.Result{Status: pipeline.StatusFailed, ErrorCode: "approval_not_found",
		ErrorMessage: "this session keeps no approvals", Content: "this session keeps no approvals"}
}

func (noApprovals) AnswerApproval(id string, _ pipeline.Call, _ approval.Answer) error {
	return fmt.Errorf("approval %q: %w", id, pending.ErrNotFound)
}

func (noApprovals) Approval(id string) (pending.Record, error) {
	return pending.Record{}, fmt.Errorf("approval %q: %w", id, pending.ErrNotFound)
}
