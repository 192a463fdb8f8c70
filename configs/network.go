package configs

import (
	"fmt"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/schema"
	"github.com/airlock-dev/airlock/urlguard"
)

// networkConflicts refuses a backend setting that would give commands another network than
// [network] mode says: one policy, not two that disagree.
func (c *Config) networkConflicts() schema.Violations {
	sec, ok := c.Environment.Section(c.Environment.Type).(backend.Networked)
	if !ok {
		return nil
	}
	n := sec.NetworkSetting()
	path := "environment." + c.Environment.Type + ".network"
	switch c.Network.Mode {
	case urlguard.ModeNone:
		if n != "" && n != "none" {
			return schema.Violations{{Path: path,
				Message: fmt.Sprintf("%q gives the container network but [network] mode = \"none\"; set [network] mode = \"open\" (or \"allowlist\")", n)}}
		}
	case urlguard.ModeAllowlist:
		if n != "" && n != "none" {
			return schema.Violations{{Path: path,
				Message: fmt.Sprintf("%q conflicts with [network] mode = \"allowlist\", which runs the container without a network (its only way out the egress proxy, through the resident helper); leave it \"none\"", n)}}
		}
	}
	return nil
}
