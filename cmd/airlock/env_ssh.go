package main

import (
	"context"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/ssh"
	"github.com/airlock-dev/airlock/configs"
)

func init() {
	registerBackend("ssh", func(ctx context.Context, cfg *configs.Config, log hclog.Logger) (backend.Environment, error) {
		return ssh.New(ctx, sshConfig(cfg), ssh.WithLogger(log))
	})
}

// sshConfig is [environment.ssh] with local paths resolved against the config file and the
// general [environment] limits filled in.
func sshConfig(cfg *configs.Config) ssh.Config {
	e := cfg.Environment
	c := e.SSH
	c.KeyPath = cfg.Abs(c.KeyPath)
	c.KnownHosts = cfg.Abs(c.KnownHosts)
	c.AgentBinary = cfg.Abs(c.AgentBinary)
	c.DefaultTimeout = e.Timeout.D()
	c.MaxOutputBytes = e.MaxOutputBytes
	c.KillGrace = e.KillGrace.D()
	return c
}
