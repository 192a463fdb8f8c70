package main

import (
	"context"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/backend/procgroup"
	"github.com/airlock-dev/airlock/configs"
)

func init() {
	registerBackend("local", func(_ context.Context, cfg *configs.Config, log hclog.Logger) (backend.Environment, error) {
		// airlock's only child processes are the commands it runs: as their subreaper it
		// inherits what escapes a command's process group (setsid) and kills it.
		if err := procgroup.EnableSubreaper(); err != nil {
			log.Warn("subreaper unavailable: processes that call setsid may outlive their command", "error", err)
		}
		e := cfg.Environment
		return local.New(local.Config{
			Workspace:      cfg.WorkspaceDir(),
			DefaultTimeout: e.Timeout.D(),
			MaxOutputBytes: e.MaxOutputBytes,
			EnvPassthrough: e.EnvPassthrough,
			KillGrace:      e.KillGrace.D(),
		}, local.WithLogger(log))
	})
}
