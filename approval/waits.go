package approval

import "time"

// How long the runtime waits for a person, by default (the [mcp] keys approval_ttl and
// elicitation_wait, and the runtime's own pending approvals).
const (
	// DefaultTTL is how long a question waits in the approvals store for a person before
	// it expires as a denial.
	DefaultTTL = 10 * time.Minute
	// DefaultAskWait is how long one call waits for an answer through the front end's
	// asker (MCP elicitation) before it comes back approval_pending; below
	// tool.CallWaitMax, so that the answer still reaches the model inside the same call.
	DefaultAskWait = 40 * time.Second
)
