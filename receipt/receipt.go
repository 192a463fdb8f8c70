package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"time"
)

// Outcome is what happened to a call, independent of what was decided.
type Outcome string

// Outcomes.
const (
	Executed        Outcome = "executed"
	NotExecuted     Outcome = "not_executed"
	ExecutionFailed Outcome = "execution_failed"
	Timeout         Outcome = "timeout"
	Interrupted     Outcome = "interrupted"
)

// Receipt is the audit record of one call.
type Receipt struct {
	CallID    string `json:"call_id"`
	ToolName  string `json:"tool_name"`
	SessionID string `json:"session_id,omitempty"`
	// JobID names the background job a job_started or job_ended event is about.
	JobID string `json:"job_id,omitempty"`
	// ArgumentsSHA256 is the hash of the canonical JSON of the arguments; the arguments
	// themselves are kept only when the config says so.
	ArgumentsSHA256 string          `json:"arguments_sha256"`
	Arguments       json.RawMessage `json:"arguments,omitempty"`
	// Client names the program that sent the call and its own id for it, so that a person
	// can join the client's transcript (Claude Code's tool-use id, Codex's call id) to the
	// ledger. Empty for calls from Airlock's own CLI.
	Client *Client `json:"client,omitempty"`

	Decision   string `json:"decision"`
	ReasonCode string `json:"reason_code"`
	DecidedBy  string `json:"decided_by"`
	// Risk is the approval classifier's verdict where one was made.
	Risk string `json:"risk,omitempty"`
	// Paths are the normalised paths policy decided on.
	Paths []string `json:"paths,omitempty"`

	DispatchStarted bool    `json:"dispatch_started"`
	HandlerStarted  bool    `json:"handler_started"`
	Outcome         Outcome `json:"outcome"`
	Status          string  `json:"status"`
	ErrorCode       string  `json:"error_code,omitempty"`
	ExitCode        *int    `json:"exit_code,omitempty"`
	Backend         string  `json:"backend,omitempty"`

	ReceivedAt time.Time  `json:"received_at"`
	DecidedAt  *time.Time `json:"decided_at,omitempty"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`

	// Network is set on network_denied events only.
	Network *NetworkDenial `json:"network,omitempty"`
}

// Client is the program that sent a call, as it named itself (MCP initialize's clientInfo),
// and the id it gave the call (from the request's _meta). Those are the client's word, not
// checked by Airlock: they join records, they do not authorise. Caller is the exception.
type Client struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	CallID  string `json:"call_id,omitempty"`
	// Caller is the name of the credential the front end authenticated the request with
	// (`airlock serve`'s bearer token): unlike the rest, Airlock checked it.
	Caller string `json:"caller,omitempty"`
}

// NetworkDenial is one refused connection: the host and port asked for, the URL guard's
// reason code, and what refused it ("web_fetch", "egress_proxy").
type NetworkDenial struct {
	Host   string `json:"host"`
	Port   int    `json:"port"`
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
	By     string `json:"by"`
	// Unattributed, on an event with no call, says why the refusal could not be tied to
	// one: it is the session's, and no call is guessed.
	Unattributed string `json:"unattributed,omitempty"`
}

// HashArguments returns the SHA-256 of the canonical JSON form of args: keys sorted, no
// insignificant white space, numbers as written. Invalid JSON is hashed as it is.
func HashArguments(args json.RawMessage) string {
	sum := sha256.Sum256(Canonical(args))
	return hex.EncodeToString(sum[:])
}

// Canonical returns args re-encoded with sorted keys and no extra white space, so that the
// same arguments hash the same however a model spaced them.
func Canonical(args json.RawMessage) []byte {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return args
	}
	out, err := json.Marshal(v) // encoding/json sorts map keys
	if err != nil {
		return args
	}
	return out
}

// Clone returns a deep copy of r: nothing the copy holds is shared with r, so whoever gets
// it (a post-hook) cannot change r through it.
func (r *Receipt) Clone() *Receipt {
	if r == nil {
		return nil
	}
	c := *r
	c.Arguments = bytes.Clone(r.Arguments)
	c.Paths = slices.Clone(r.Paths)
	c.Client = clonePtr(r.Client)
	c.ExitCode = clonePtr(r.ExitCode)
	c.DecidedAt = clonePtr(r.DecidedAt)
	c.StartedAt = clonePtr(r.StartedAt)
	c.FinishedAt = clonePtr(r.FinishedAt)
	c.Network = clonePtr(r.Network)
	return &c
}

// clonePtr returns a pointer to a copy of *p, or nil; T holds no reference of its own.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
