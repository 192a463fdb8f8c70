package configs

import (
	"fmt"

	"github.com/airlock-dev/airlock/schema"
	"github.com/airlock-dev/airlock/urlguard"
)

// networkConflicts refuses a backend setting that would give commands another network than
// [network] mode says: one policy, not two that disagree.
func (c *Config) networkConflicts() schema.Violations {
	if c.Environment.Type != "docker" {
		return nil
	}
	n := c.Environment.Docker.Network
	switch c.Network.Mode {
	case urlguard.ModeNone:
		if n != "" && n != "none" {
			return schema.Violations{{Path: "environment.docker.network",
				Message: fmt.Sprintf("%q gives the container network but [network] mode = \"none\"; set [network] mode = \"open\" (or \"allowlist\")", n)}}
		}
	case urlguard.ModeAllowlist:
		if n != "" && n != "none" {
			return schema.Violations{{Path: "environment.docker.network",
				Message: fmt.Sprintf("%q conflicts with [network] mode = \"allowlist\", which puts the container on an internal network of its own; leave it \"none\"", n)}}
		}
	}
	return nil
}
