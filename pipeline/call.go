package pipeline

import (
	"encoding/json"

	"github.com/airlock-dev/airlock/receipt"
)

// Call is a model's tool call.
type Call struct {
	ID        string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	// Client is the front end's word on who sent the call and under which id of its own;
	// it goes into the receipt as it is.
	Client *receipt.Client `json:"client,omitempty"`
}

// Status is how a call ended, as the model is told.
type Status string

// Statuses.
const (
	StatusOK          Status = "ok"
	StatusFailed      Status = "failed"
	StatusDenied      Status = "denied"
	StatusBlocked     Status = "blocked"
	StatusTimeout     Status = "timeout"
	StatusCancelled   Status = "cancelled"
	StatusInterrupted Status = "interrupted"
)

// Stable error codes of the pipeline itself. Policy, approval and tools add their own.
const (
	CodeUnknownTool           = "unknown_tool"
	CodeInputValidation       = "input_validation_failed"
	CodeOutputValidation      = "output_validation_failed"
	CodeHandlerFailed         = "handler_failed"
	CodePreHookBlocked        = "pre_hook_blocked"
	CodePolicyError           = "policy_error"
	CodeTimeout               = "timeout"
	CodeCancelled             = "cancelled"
	CodeInterrupted           = "interrupted"
	CodeToolNotAllowed        = "tool_not_allowed"
	CodeInvalidPath           = "invalid_path"
	CodeDenialBudgetExhausted = "denial_budget_exhausted"
	CodeApprovalRequired      = "approval_required"
	// CodeApprovalPending: a person was asked and has not answered yet. It is not counted
	// against the denial budget: nobody refused anything.
	CodeApprovalPending = "approval_pending"
	// CodeInvalidCallID: a call id holding control characters or invalid UTF-8. Ids are
	// echoed in results, logs and `airlock receipts show`, where such characters could
	// forge or hide rows.
	CodeInvalidCallID = "invalid_call_id"
	// CodeMissingToolName: a call without a name.
	CodeMissingToolName = "missing_tool_name"
	// CodeLedgerError: the call did not run because its dispatched receipt could not be made
	// durable (the ledger's disk is full or failing), or an earlier call of its batch met
	// that and the batch stopped. The message names the ledger.
	CodeLedgerError = "ledger_error"
)

// Metadata is what the model and the operator learn about a call beyond its content.
type Metadata struct {
	DurationMS  int64    `json:"duration_ms"`
	OutputChars int      `json:"output_chars"`
	Truncated   bool     `json:"truncated"`
	ExitCode    *int     `json:"exit_code,omitempty"`
	QueuedMS    *int64   `json:"queued_ms,omitempty"`
	StartedAt   string   `json:"started_at,omitempty"`
	EndedAt     string   `json:"ended_at,omitempty"`
	Backend     string   `json:"backend,omitempty"`
	Notes       []string `json:"notes,omitempty"`
}

// Result is what one call comes back as.
type Result struct {
	CallID       string `json:"call_id"`
	ToolName     string `json:"tool_name"`
	Status       Status `json:"status"`
	ErrorCode    string `json:"error_code,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`
	Retryable    bool   `json:"retryable"`
	Content      string `json:"content"`
	// Output is the whole output of a tool whose output policy is summary_only: the model
	// reads a summary in Content, the caller gets this.
	Output   string           `json:"output,omitempty"`
	Data     any              `json:"data,omitempty"`
	Metadata Metadata         `json:"metadata"`
	Receipt  *receipt.Receipt `json:"receipt"`
	// ApprovalID is set for a call that waits for a person (code approval_pending).
	ApprovalID string `json:"approval_id,omitempty"`
}
