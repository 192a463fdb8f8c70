package main

import (
	"context"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/configs"
)

func init() {
	registerBackend("local", func(_ context.Context, cfg *configs.Config, log hclog.Logger) (backend.Environment, error) {
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
