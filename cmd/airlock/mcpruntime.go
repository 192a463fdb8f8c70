package main

import (
	"context"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/mcpserver"
)

// mcpRuntime is what `airlock mcp` and `airlock serve` build alike from a config: the
// runtime, which keeps questions for a person in the approvals store, and an MCP server per
// session.
type mcpRuntime struct {
	cfg    *configs.Config
	log    hclog.Logger
	eng    *engine.Engine
	elicit bool
}

// openMCPRuntime builds the runtime; opts add to the options every MCP front end uses.
func openMCPRuntime(ctx context.Context, cfg *configs.Config, log hclog.Logger, elicit bool, opts ...engine.Option) (*mcpRuntime, error) {
	all := append([]engine.Option{engine.WithLogger(log), engine.WithPendingApprovals(cfg.MCP.ApprovalTTL.D()),
		engine.WithJobPromotion(), engine.WithMetricsEndpoint()}, opts...)
	eng, err := engine.New(ctx, cfg, all...)
	if err != nil {
		return nil, err
	}
	return &mcpRuntime{cfg: cfg, log: log, eng: eng, elicit: elicit}, nil
}

// server builds the MCP server over one session.
func (r *mcpRuntime) server(ctx context.Context, sess mcpserver.Session) (*mcpserver.Server, error) {
	return mcpserver.New(ctx, mcpserver.Options{
		Registry: r.eng.Registry(), Session: sess, ElicitWait: r.cfg.MCP.ElicitationWait.D(),
		Toolsets: r.cfg.Tools.Enabled, AllowedTools: r.cfg.Policy.AllowedTools,
		ApprovalWaitMax: r.cfg.MCP.ApprovalWaitMax.D(), Logger: r.log, Version: version, NoElicitation: !r.elicit,
	})
}

// close ends every session and the runtime.
func (r *mcpRuntime) close(ctx context.Context) {
	if err := r.eng.Close(context.WithoutCancel(ctx)); err != nil {
		r.log.Warn("close failed", "error", err)
	}
}
