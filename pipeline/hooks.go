package pipeline

import (
	"context"
	"encoding/json"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/tool"
)

// Decision is what policy or approval decided about a call.
type Decision string

// Decisions.
const (
	Allow Decision = "allow"
	Deny  Decision = "deny"
	// Ask means a person must answer; it is recorded while the call waits.
	Ask Decision = "ask"
)

// Verdict is a policy's or approver's answer.
type Verdict struct {
	Decision Decision
	// Code is a stable snake_case reason: "outside_roots", "approval_required", "auto_approved".
	Code string
	// Message tells the model what it may do instead.
	Message string
	// DecidedBy names the rule, hook or approver that decided.
	DecidedBy string
	Retryable bool
	// Risk is the classifier's verdict on a command, where approval made one.
	Risk string
	// Paths are the resolved paths, in the order of the call's PathRefs. Policy fills them;
	// the handler and the scheduler use them.
	Paths []tool.ResolvedPath
	// ApprovalID names the open question of a call that waits for a person (code
	// approval_pending): the same call again, or an answer to it, finds it.
	ApprovalID string
	// Block marks a policy refusal that a pre-hook would give too (a URL the guard
	// refuses), checked early so that no person is asked about it: the call ends with
	// status blocked and is not counted against the denial budget, as the hook's would.
	Block bool
}

// Request is what policy and approval see of a call: its validated arguments, the tool's
// definition, the paths it names and the environment it would run in.
type Request struct {
	Call      Call
	Tool      *tool.Tool
	Args      json.RawMessage
	PathRefs  []tool.PathRef
	Env       backend.Environment
	SessionID string
	// Paths holds policy's resolved paths when approval runs.
	Paths []tool.ResolvedPath
	// Risk holds approval's verdict on the call once approved (the scheduler's Scoper reads
	// it rather than judging the call again).
	Risk string
	// OnWait is set for approval: call it just before blocking on a person, so the ledger
	// records the call as waiting.
	OnWait func()
}

// Policy decides whether a call may run at all: tool allowlist, paths, sizes. It must not
// have side effects on the environment beyond reading it.
type Policy interface {
	Check(ctx context.Context, req *Request) (Verdict, error)
}

// Approval decides whether an allowed call runs now, waits for a person, or is refused.
type Approval interface {
	Approve(ctx context.Context, req *Request) (Verdict, error)
}

// PreHook runs after approval and before the handler. Returning a Block stops the call
// with status blocked; an error (or a panic) fails closed with policy_error.
type PreHook interface {
	Name() string
	Before(ctx context.Context, req *Request) (*Block, error)
}

// Block is a pre-hook's refusal.
type Block struct {
	// Code is a stable reason; empty means pre_hook_blocked.
	Code      string
	Message   string
	Retryable bool
}

// PostHook observes a finished call. It cannot change the result: it gets a deep copy.
type PostHook interface {
	Name() string
	After(ctx context.Context, req *Request, res Result)
}

// Observer is a PostHook that looks only at some tools' calls: the pipeline copies a result
// for it, and calls it, only when Observes(tool) is true. A PostHook that is not an Observer
// sees every call.
type Observer interface {
	Observes(tool string) bool
}
