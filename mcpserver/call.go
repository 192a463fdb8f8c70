package mcpserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/receipt"
	"github.com/airlock-dev/airlock/telemetry"
	"github.com/airlock-dev/airlock/tool"
)

// Structured is what a machine reads of a result: status, exit code, receipt. It travels in
// the result's _meta under [ResultMetaKey], never as structuredContent: Claude Code and Codex
// give their model a result's structuredContent instead of its text content when it has one
// (Claude Code keeps only the structured object; Codex prefers it), so a status object there
// would hide the command's output and the file's text from the model. _meta is not shown to
// the model by any client, and the text content carries everything the model acts on.
type Structured struct {
	Status       string `json:"status"`
	ErrorCode    string `json:"error_code,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
	Retryable    bool   `json:"retryable"`
	ExitCode     *int   `json:"exit_code,omitempty"`
	// ReceiptID is the call's ID in the ledger; ReceiptSHA256 the SHA-256 of the receipt's
	// JSON as returned here.
	ReceiptID     string `json:"receipt_id"`
	ReceiptSHA256 string `json:"receipt_sha256,omitempty"`
	// ApprovalID and Next are set for status approval_pending.
	ApprovalID string             `json:"approval_id,omitempty"`
	Next       string             `json:"next,omitempty"`
	DecidedBy  string             `json:"decided_by,omitempty"`
	Data       any                `json:"data,omitempty"`
	Metadata   *pipeline.Metadata `json:"metadata,omitempty"`
	// Output is the whole output a summary_only tool withheld from the model.
	Output string `json:"output,omitempty"`
}

// StatusApprovalPending is the status of a call waiting for a person.
const StatusApprovalPending = "approval_pending"

// ResultMetaKey is the _meta key of a result's [Structured] status.
const ResultMetaKey = "dev.airlock/result"

// result is a CallToolResult with text for the model and st for machines.
func result(text string, st Structured, isError bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Meta:    mcp.Meta{ResultMetaKey: st},
		Content: []mcp.Content{&mcp.TextContent{Text: text}},
		IsError: isError,
	}
}

// handler runs a tools/call for one registered tool on the session.
func (s *Server) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.Arguments
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		ci := s.newCallInfo(req, name, args)
		if len(req.Params.InputResponses) > 0 {
			// A multi-round-trip retry: the client's elicitation answered the approval named
			// by the request state. Record the answer, then run the call: the approver finds it.
			if res := s.applyInputResponse(ci, req); res != nil {
				return res, nil
			}
		}
		return s.run(ctx, req, ci), nil
	}
}

// run takes one call through the runtime and turns its result into MCP's.
func (s *Server) run(ctx context.Context, req *mcp.CallToolRequest, ci *callInfo) *mcp.CallToolResult {
	// The call's spans continue the client's trace (SEP-414: params._meta.traceparent).
	ctx = telemetry.FromMeta(ctx, req.Params.Meta)
	ctx = s.asking(withCallInfo(ctx, ci), ci)
	if tok := req.Params.GetProgressToken(); tok != nil {
		pw := newProgress(ctx, req.Session, tok)
		defer pw.stop()
		ctx = tool.WithStream(ctx, &tool.Stream{Stdout: pw, Stderr: pw})
	}
	call := pipeline.Call{ID: newCallID(), Name: ci.tool, Arguments: ci.args, Client: clientOf(req)}
	res := s.opts.Session.Run(ctx, call)
	log := s.log.With("call_id", call.ID, "tool", ci.tool)
	log.Debug("call done", "status", res.Status, "error_code", res.ErrorCode)
	if res.ErrorCode == pipeline.CodeApprovalPending {
		if rec := ci.needsInput(); rec != nil && ci.mrtr {
			// The client elicits on its own turn (protocol 2026-07-28): ask and return now.
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{approvalInput: elicitParams(*rec)},
				RequestState:  rec.ID,
			}
		}
		return pendingResult(res, res.ApprovalID)
	}
	return toMCP(res)
}

// toMCP is the MCP form of a result. Anything but status ok is isError, with the reason in
// the text the model reads; the notes (what the environment said, what was not enforced)
// follow the content there too, since the model reads nothing else.
func toMCP(res pipeline.Result) *mcp.CallToolResult {
	text := res.Content
	if res.Status != pipeline.StatusOK {
		text = fmt.Sprintf("%s (%s): %s", res.Status, res.ErrorCode, res.ErrorMessage)
		if res.Content != "" && res.Content != res.ErrorMessage && res.Content != string(res.Status) {
			text += "\n" + res.Content
		}
	}
	if len(res.Metadata.Notes) > 0 {
		var b strings.Builder
		b.WriteString(text)
		if text != "" && !strings.HasSuffix(text, "\n") {
			b.WriteByte('\n')
		}
		for _, n := range res.Metadata.Notes {
			b.WriteString("[note] ")
			b.WriteString(n)
			b.WriteByte('\n')
		}
		text = b.String()
	}
	return result(text, structured(res), res.Status != pipeline.StatusOK)
}

func structured(res pipeline.Result) Structured {
	md := res.Metadata
	st := Structured{
		Status: string(res.Status), ErrorCode: res.ErrorCode, ErrorMessage: res.ErrorMessage,
		Retryable: res.Retryable, ExitCode: md.ExitCode, ReceiptID: res.CallID, Data: res.Data, Metadata: &md,
		Output: res.Output,
	}
	if res.Receipt != nil {
		if b, err := json.Marshal(res.Receipt); err == nil {
			sum := sha256.Sum256(b)
			st.ReceiptSHA256 = hex.EncodeToString(sum[:])
		}
		st.DecidedBy = res.Receipt.DecidedBy
	}
	return st
}

// pendingResult answers a call that waits for a person: not run, not refused, and says what
// to do next.
func pendingResult(res pipeline.Result, id string) *mcp.CallToolResult {
	st := structured(res)
	st.Status, st.ApprovalID, st.Retryable = StatusApprovalPending, id, true
	st.Next = fmt.Sprintf("call %s with approval_id %q (or repeat this call) to get the result once a person answers; "+
		"a person answers with: airlock approvals approve %s (or deny %s --message TEXT)", ApprovalWaitTool, id, id, id)
	text := fmt.Sprintf("approval_pending: this call has not run; it waits for a person's approval (approval %s).\n%s\n", id, st.Next)
	return result(text, st, true)
}

// clientCallIDKeys are the _meta keys under which clients send their own id for a call:
// Claude Code's tool-use id, Codex's call id, and the spellings other clients use.
var clientCallIDKeys = []string{"claudecode/toolUseId", "codex/callId", "callId", "call_id", "toolUseId", "tool_call_id", "toolCallId"}

// clientOf is the client's name and version from initialize, and its id for this call.
func clientOf(req *mcp.CallToolRequest) *receipt.Client {
	c := &receipt.Client{}
	if ip := req.Session.InitializeParams(); ip != nil && ip.ClientInfo != nil {
		c.Name, c.Version = ip.ClientInfo.Name, ip.ClientInfo.Version
	}
	for _, k := range clientCallIDKeys {
		if v, ok := req.Params.Meta[k].(string); ok && v != "" {
			c.CallID = v
			break
		}
	}
	if *c == (receipt.Client{}) {
		return nil
	}
	return c
}

func refusal(code, msg string, retryable bool) *mcp.CallToolResult {
	return result("failed ("+code+"): "+msg, Structured{Status: "failed", ErrorCode: code, ErrorMessage: msg, Retryable: retryable}, true)
}

func newCallID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "mcp_" + hex.EncodeToString(b[:])
}

// progress sends a long call's output so far as MCP progress notifications: at most one
// every progressEvery, the message holding the last progressTail bytes, the progress value
// the bytes written so far.
type progress struct {
	ctx  context.Context
	ss   *mcp.ServerSession
	tok  any
	mu   sync.Mutex
	tail []byte
	n    int64
	last time.Time
	done chan struct{}
	once sync.Once
	sent int64
}

const (
	progressEvery = 200 * time.Millisecond
	progressTail  = 4096
)

func newProgress(ctx context.Context, ss *mcp.ServerSession, tok any) *progress {
	p := &progress{ctx: ctx, ss: ss, tok: tok, done: make(chan struct{})}
	go p.loop()
	return p
}

func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	p.n += int64(len(b))
	p.tail = append(p.tail, b...)
	if over := len(p.tail) - progressTail; over > 0 {
		p.tail = append(p.tail[:0:0], p.tail[over:]...)
	}
	p.mu.Unlock()
	return len(b), nil
}

func (p *progress) loop() {
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-p.ctx.Done():
			return
		case <-t.C:
			p.flush()
		}
	}
}

func (p *progress) flush() {
	p.mu.Lock()
	n, msg := p.n, string(p.tail)
	p.mu.Unlock()
	if n == p.sent {
		return
	}
	p.sent = n
	for len(msg) > 0 && !utf8.ValidString(msg) {
		msg = msg[1:] // the tail may start inside a character
	}
	_ = p.ss.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{
		ProgressToken: p.tok, Progress: float64(n), Message: strings.TrimRight(msg, "\n"),
	})
}

func (p *progress) stop() {
	p.once.Do(func() { close(p.done) })
}
