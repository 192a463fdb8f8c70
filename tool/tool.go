package tool

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
)

// Risk is a tool's risk class, stated by its definition.
type Risk string

// Risk classes.
const (
	RiskRead      Risk = "read"
	RiskWrite     Risk = "write"
	RiskShell     Risk = "shell"
	RiskNetwork   Risk = "network"
	RiskDangerous Risk = "dangerous"
)

func (r Risk) valid() bool {
	switch r {
	case RiskRead, RiskWrite, RiskShell, RiskNetwork, RiskDangerous:
		return true
	}
	return false
}

// OutputMode says how a model-facing text over the limit is shortened.
type OutputMode string

// Output modes.
const (
	// HeadTail keeps the beginning and the end with a marker between.
	HeadTail OutputMode = "head_tail"
	// Full passes the text whole: only the backend's byte cap applies.
	Full OutputMode = "full"
	// SummaryOnly gives the model a summary (size, first and last line, exit code) while
	// the whole output goes to the caller only: the result's output field, over HTTP with
	// the call's result, over MCP in the result's _meta, which clients do not show the model.
	SummaryOnly OutputMode = "summary_only"
)

// ValidOutputMode says whether m is one of the output modes.
func ValidOutputMode(m OutputMode) bool {
	return m == HeadTail || m == Full || m == SummaryOnly
}

// OutputPolicy bounds what the model reads of one call.
type OutputPolicy struct {
	MaxChars int
	Mode     OutputMode
}

// Access is how a call touches a path.
type Access string

// Accesses.
const (
	Read  Access = "read"
	Write Access = "write"
)

// PathRef is a path a call's arguments name, before policy has looked at it.
type PathRef struct {
	// Arg names the argument ("path"), so that the handler can find the decision for it.
	Arg    string
	Path   string
	Access Access
}

// ResolvedPath is a path after policy: absolute, normalised, symlinks resolved in the
// environment that will do the work. Handlers use Resolved, never the model's string.
type ResolvedPath struct {
	Arg      string `json:"arg"`
	Raw      string `json:"raw"`
	Resolved string `json:"resolved"`
	Access   Access `json:"access"`
	// Exists is false for a path that does not exist yet (a write that creates it).
	Exists bool `json:"exists"`
}

// Definition is one tool.
type Definition struct {
	Name        string
	Version     string
	Description string
	// InputSchema and OutputSchema are JSON Schema documents. The output schema checks
	// Output.Data; a tool without one may return no Data.
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Risk         Risk
	// ParallelSafe tools may run beside other calls whose paths do not conflict.
	ParallelSafe bool
	Output       OutputPolicy
	// Timeout is the default time a call may take; zero means the environment's default.
	Timeout time.Duration
	// CallTimeout, for a tool whose arguments may set their own timeout, returns the time a
	// call with these (validated) arguments may take, given the default def. The pipeline
	// hands it to the handler as Invocation.Timeout and sets its safety deadline past it.
	// Nil means def.
	CallTimeout func(args json.RawMessage, def time.Duration) time.Duration
	// Paths lists the paths a call touches, from its validated arguments. Nil for tools that
	// name no paths.
	Paths func(args json.RawMessage) ([]PathRef, error)
	// Subject says what a person approves of a call, from its validated arguments (see
	// [Subject]); nil shows every argument and lets "for the session" cover the same
	// arguments only.
	Subject func(args json.RawMessage) (Subject, error)
	// Preview shows a person the call's effect before it runs (a write's diff); nil for a
	// tool whose arguments say it all.
	Preview Preview
	Handler Handler
	// Toolset is the group the tool is enabled with ([tools] enabled): "files", "terminal",
	// "jobs", "web". Empty means the tool is always listed.
	Toolset string
	// Needs are what the tool requires of an environment to be offered at all; a front end
	// does not list a tool whose needs are unmet, and says why (airlock mcp --check).
	Needs []Need
}

// Need is one requirement a tool has of its environment.
type Need struct {
	// Programs: at least one of them must be on the environment's PATH.
	Programs []string
	// Capability names a backend capability the tool cannot work without ("streaming").
	Capability string
	// Why is said when the need is unmet.
	Why string
}

// Handler does a tool's work.
type Handler func(ctx context.Context, inv *Invocation) (*Output, error)

// Invocation is what a handler gets: validated arguments, the paths policy resolved, and
// the environment to work in.
type Invocation struct {
	CallID    string
	SessionID string
	Args      json.RawMessage
	// Paths maps each PathRef.Arg to its policy decision.
	Paths   map[string]ResolvedPath
	Env     backend.Environment
	Timeout time.Duration
	Log     hclog.Logger
}

// Status is how a call that reached its handler ended, as the handler sees it.
type Status string

// Handler statuses; the zero value means success.
const (
	StatusOK          Status = ""
	StatusFailed      Status = "failed"
	StatusTimeout     Status = "timeout"
	StatusInterrupted Status = "interrupted"
)

// Output is what a handler returns. A command that ran and exited non-zero is a success
// with an ExitCode; Status failed is for an operation that ran but could not do what was
// asked (a patch with no match), with an ErrorCode the model can act on.
type Output struct {
	Content      string
	Data         any
	Status       Status
	ErrorCode    string
	ErrorMessage string
	Retryable    bool
	ExitCode     *int
	// Truncated is set when the environment cut the output.
	Truncated bool
	// Notes pass on what the environment said (recreated, reconnected).
	Notes []string
}
