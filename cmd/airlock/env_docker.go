package main

import (
	"context"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/configs"
)

func init() {
	registerBackend("docker", func(ctx context.Context, cfg *configs.Config, log hclog.Logger) (backend.Environment, error) {
		return docker.New(ctx, dockerConfig(cfg), docker.WithLogger(log))
	})
}

// dockerConfig is [environment.docker] with host paths resolved against the config file and
// the general [environment] limits filled in.
func dockerConfig(cfg *configs.Config) docker.Config {
	e := cfg.Environment
	c := e.Docker
	c.Volumes = append([]docker.Volume(nil), c.Volumes...)
	for i := range c.Volumes {
		c.Volumes[i].Host = cfg.Abs(c.Volumes[i].Host)
	}
	c.AgentBinary = cfg.Abs(c.AgentBinary)
	c.DefaultTimeout = e.Timeout.D()
	c.MaxOutputBytes = e.MaxOutputBytes
	c.EnvPassthrough = e.EnvPassthrough
	c.KillGrace = e.KillGrace.D()
	return c
}
