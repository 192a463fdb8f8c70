package configs

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/schema"
	"github.com/airlock-dev/airlock/tool"
)

// Toolsets are the toolsets [tools] enabled may name.
var Toolsets = []string{"files", "terminal", "jobs", "web"}

// Jobs is the [jobs] table: background jobs that a terminal call starts with background:
// true, or that a long foreground command becomes.
type Jobs struct {
	// PromoteAfter turns a foreground command still running after it into a background
	// job, so that the call returns before the client's own tool timeout; 0 never does.
	PromoteAfter backend.Duration `toml:"promote_after"`
	// Timeout bounds a job that asks for none.
	Timeout backend.Duration `toml:"timeout"`
	// BufferBytes is the unread output kept per job.
	BufferBytes int `toml:"buffer_bytes"`
	// MaxRunning bounds the running jobs of one session.
	MaxRunning int `toml:"max_running"`
	// MaxWait bounds one job_wait call.
	MaxWait backend.Duration `toml:"max_wait"`
}

func defaultJobs() Jobs {
	return Jobs{
		PromoteAfter: backend.Duration(tool.CallWaitMax),
		Timeout:      backend.Duration(time.Hour),
		BufferBytes:  1 << 20,
		MaxRunning:   16,
		MaxWait:      backend.Duration(tool.CallWaitMax),
	}
}

// MCP is the [mcp] table: how `airlock mcp` asks people.
type MCP struct {
	// ApprovalTTL is how long a question waits for a person before it expires as a denial.
	ApprovalTTL backend.Duration `toml:"approval_ttl"`
	// ElicitationWait is how long one call waits for an answer through the client's
	// elicitation before returning approval_pending.
	ElicitationWait backend.Duration `toml:"elicitation_wait"`
	// ApprovalWaitMax bounds one approval_wait call.
	ApprovalWaitMax backend.Duration `toml:"approval_wait_max"`
}

func defaultMCP() MCP {
	return MCP{
		ApprovalTTL:     backend.Duration(approval.DefaultTTL),
		ElicitationWait: backend.Duration(approval.DefaultAskWait),
		ApprovalWaitMax: backend.Duration(tool.CallWaitMax),
	}
}

// clientSeconds is tool.ClientCallTimeout in seconds, as the messages give it.
const clientSeconds = int(tool.ClientCallTimeout / time.Second)

func (c *Config) validateAgentFacing() schema.Violations {
	var vs schema.Violations
	for _, w := range []struct {
		path string
		d    backend.Duration
	}{
		{"jobs.max_wait", c.Jobs.MaxWait}, {"mcp.elicitation_wait", c.MCP.ElicitationWait}, {"mcp.approval_wait_max", c.MCP.ApprovalWaitMax},
	} {
		if w.d.D() <= 0 || w.d.D() >= tool.ClientCallTimeout {
			vs = append(vs, schema.Violation{Path: w.path, Message: fmt.Sprintf("must be above 0 and below %ds, the clients' tool timeout", clientSeconds)})
		}
	}
	if c.MCP.ApprovalTTL.D() <= 0 {
		vs = append(vs, schema.Violation{Path: "mcp.approval_ttl", Message: "must be greater than 0"})
	}
	if c.Jobs.PromoteAfter.D() >= tool.ClientCallTimeout {
		vs = append(vs, schema.Violation{Path: "jobs.promote_after", Message: fmt.Sprintf("must be below %ds, the clients' tool timeout (0 turns promotion off)", clientSeconds)})
	}
	return vs
}

// ApprovalsDir is where approvals waiting for a person are kept, beside the ledger in
// Airlock's own state, so that `airlock mcp` and `airlock approvals` in another terminal
// find the same ones.
func (c *Config) ApprovalsDir() string {
	return filepath.Join(filepath.Dir(c.LedgerPath()), "approvals")
}
