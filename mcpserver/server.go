package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/approval/pending"
	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/tool"
)

// Session is the runtime session the server's calls run on; *engine.Session implements it.
type Session interface {
	ID() string
	Run(ctx context.Context, c pipeline.Call) pipeline.Result
	Environment() backend.Environment
}

// Approvals is what a session whose runtime waits for a person offers the server, which
// only asks (elicitation) and waits; *engine.Session implements it. A session without it
// has no approval_wait.
type Approvals interface {
	// AwaitApproval waits for an answer to one of the session's approvals and returns its
	// call to run again, or the result to give instead.
	AwaitApproval(ctx context.Context, id string, wait time.Duration) (pipeline.Call, *pipeline.Result)
	// AnswerApproval records an answer the client gave on its own turn.
	AnswerApproval(id string, c pipeline.Call, a approval.Answer) error
	// Approval returns one of the session's approvals.
	Approval(id string) (pending.Record, error)
}

// Options configure a [Server]. Registry and Session are required.
type Options struct {
	Registry *tool.Registry
	Session  Session
	// ElicitWait is how long a call waits for an answer through elicitation/create before
	// returning approval_pending; zero means 40 s, below the clients' 60 s tool timeout.
	ElicitWait time.Duration
	// Toolsets are the enabled toolsets ([tools] enabled); nil enables every one.
	Toolsets []string
	// AllowedTools, when not empty, is the only tools listed ([policy] allowed_tools).
	AllowedTools []string
	// ApprovalWaitMax bounds approval_wait; zero means 45 s, below the clients' 60 s.
	ApprovalWaitMax time.Duration
	Logger          hclog.Logger
	// Version is the server's version in the MCP handshake.
	Version string
	// NoElicitation never asks through the client's elicitation, even when it offers it:
	// every approval comes back approval_pending. Codex 0.171 in exec mode declares
	// elicitation and declines every request unasked, which would read as a person's denial.
	NoElicitation bool
}

// Server is an MCP server over one runtime session.
type Server struct {
	opts   Options
	log    hclog.Logger
	mcp    *mcp.Server
	listed []Availability
}

// ApprovalWaitTool is the tool that waits for a pending approval and then runs the call.
const ApprovalWaitTool = "approval_wait"

// New checks which tools the environment can serve and builds the server.
func New(ctx context.Context, opts Options) (*Server, error) {
	switch {
	case opts.Registry == nil:
		return nil, errors.New("mcp server: registry is required")
	case opts.Session == nil:
		return nil, errors.New("mcp server: session is required")
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.ElicitWait <= 0 {
		opts.ElicitWait = approval.DefaultAskWait
	}
	if opts.ApprovalWaitMax <= 0 {
		opts.ApprovalWaitMax = tool.CallWaitMax
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := &Server{opts: opts, log: opts.Logger.Named("mcp")}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "airlock", Title: "Airlock", Version: opts.Version},
		&mcp.ServerOptions{
			Instructions: "Airlock runs your shell commands and file edits in its configured environment (local, Docker or SSH) " +
				"after policy and approval checks, and keeps a receipt of each. A result with status approval_pending did not run yet: " +
				"call approval_wait with its approval_id (or repeat the call) to get the result once a person answers.",
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		})
	avail := Check(ctx, opts.Registry, opts.Session.Environment(), opts.Toolsets, opts.AllowedTools)
	for _, a := range avail {
		if !a.Listed {
			s.log.Info("tool not listed", "tool", a.Name, "why", a.Why)
			continue
		}
		t, _ := opts.Registry.Lookup(a.Name)
		s.mcp.AddTool(mcpTool(t), s.handler(t.Name))
		s.listed = append(s.listed, a)
	}
	s.mcp.AddTool(&mcp.Tool{
		Name: ApprovalWaitTool,
		Description: "Wait for a person's answer to a pending approval (the approval_id of a result with status " +
			"approval_pending), then run that call and return its result. A call still unanswered comes back " +
			"approval_pending again: call again.",
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type": "object", "additionalProperties": false, "required": ["approval_id"],
  "properties": {"approval_id": {"type": "string", "minLength": 1, "maxLength": 64},
  "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": %d, "description": "Seconds to wait (default and maximum %d)."}}}`,
			int(opts.ApprovalWaitMax/time.Second), int(opts.ApprovalWaitMax/time.Second))),
		Annotations: &mcp.ToolAnnotations{Title: "Wait for an approval", DestructiveHint: ptr(true), OpenWorldHint: ptr(false)},
	}, s.approvalWait)
	return s, nil
}

// Listed returns what the server lists, with the reason for each tool it does not.
func (s *Server) Listed() []Availability { return s.listed }

// MCP returns the underlying SDK server, for transports other than stdio.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one client on t (stdio: &mcp.StdioTransport{}) until it disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.mcp.Run(ctx, t)
}

// mcpTool is the MCP form of a registered tool: its own schema and the hints a client uses
// to decide what needs a person's eye.
func mcpTool(t *tool.Tool) *mcp.Tool {
	read := t.Risk == tool.RiskRead
	ann := &mcp.ToolAnnotations{
		ReadOnlyHint:    read,
		DestructiveHint: ptr(!read),
		IdempotentHint:  read,
		OpenWorldHint:   ptr(t.Risk == tool.RiskShell || t.Risk == tool.RiskNetwork),
	}
	return &mcp.Tool{Name: t.Name, Description: t.Description, InputSchema: json.RawMessage(t.InputSchema), Annotations: ann}
}

func ptr[T any](v T) *T { return &v }
