package tool

import "time"

// How long one call may wait inside a client's tool call. An agent's client gives a tool
// call limited time and treats one that runs longer as failed (Codex 60 s unless told
// otherwise; `airlock install` sets 120 s for the clients it configures), so every wait
// inside a call ends well before: a foreground command still running is made a job,
// job_wait and approval_wait return what they have. Configuration keys that bound such
// waits are checked against ClientCallTimeout, and default to CallWaitMax.
const (
	// ClientCallTimeout is the clients' tool-call timeout that waits inside a call must
	// stay below.
	ClientCallTimeout = 60 * time.Second
	// CallWaitMax is the longest one call waits by default: jobs.promote_after,
	// jobs.max_wait and mcp.approval_wait_max.
	CallWaitMax = 45 * time.Second
)
