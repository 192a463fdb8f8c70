package docker

import (
	"context"
	_ "embed"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/backend"
)

//go:embed config.schema.json
var configSchema []byte

func init() {
	backend.Register(backend.Record{
		Kind:      "docker",
		Summary:   "a hardened container per session, through the Engine API",
		Schema:    configSchema,
		NewConfig: func() any { c := DefaultConfig(); return &c },
		// The resident helper's keys were named for the agent, which it is not.
		Renamed: map[string]string{"agent": "helper", "agent_binary": "helper_binary"},
		// Only what must be refused before any container opens; New checks the rest.
		Validate:   func(section any) error { return section.(*Config).validatePool() },
		Derive:     derive,
		Open:       open,
		PerSession: true,
		WarmPool:   true,
		Modes:      []string{ModeHelper, ModeExec},
		SetMode: func(section any, mode string) error {
			c := section.(*Config)
			switch mode {
			case "", ModeHelper, backend.OldModeHelper:
				c.Helper = HelperAuto
			case ModeExec:
				c.Helper = HelperOff
			default:
				return fmt.Errorf("mode %q: want %s or %s", mode, ModeHelper, ModeExec)
			}
			return nil
		},
		GC: func(ctx context.Context, section any, o backend.GCOptions) ([]backend.GCItem, error) {
			items, err := GC(ctx, GCOptions{Host: section.(*Config).Host, All: o.All, DryRun: o.DryRun, MinAge: o.MinAge, AllOwners: o.AllOwners})
			out := make([]backend.GCItem, len(items))
			for i, it := range items {
				out[i] = backend.GCItem{ID: it.ID, Name: it.Name, State: it.State, Reason: it.Reason, Removed: it.Removed, Err: it.Err, OtherOwner: it.OtherOwner}
			}
			return out, err
		},
		Capabilities: backend.Capabilities{FilesystemIsolation: true, NetworkIsolation: true, ProcessTreeKill: true, ResidentHelper: true},
	})
}

// derive applies [network] mode to the session's section: none keeps the container without
// network, open puts it on environment.docker.network (the default bridge when that is
// "none"), allowlist keeps it without a network and relays the resident helper's loopback
// port to the runtime's egress proxy, its only way out (see [WithEgressProxy]). Allowlist
// containers are not reused: their sockets and proxy live as long as the session.
func derive(section any, p backend.Policy) ([]any, error) {
	c := section.(*Config)
	if p.Private {
		// One container per session: a reused one would be shared by every caller.
		c.ReuseContainer = false
	}
	switch p.Network.Mode {
	case backend.NetworkOpen:
		if c.Network == "none" {
			c.Network = "bridge"
		}
	case backend.NetworkAllowlist:
		if p.Network.Proxy == nil {
			return nil, errors.New(`[network] mode = "allowlist" without an egress proxy`)
		}
		c.ReuseContainer = false
		return []any{WithEgressProxy(p.Network.Proxy)}, nil
	}
	return nil, nil
}

// open starts the container of a session from its record's settings; Options of type
// [Option] (an egress proxy, a logger) are applied.
func open(ctx context.Context, s backend.Settings) (backend.Environment, error) {
	c := *s.Section.(*Config)
	c.DefaultTimeout = s.DefaultTimeout
	c.MaxOutputBytes = s.MaxOutputBytes
	c.EnvPassthrough = s.EnvPassthrough
	c.KillGrace = s.KillGrace
	c.Session = s.Session
	c.PoolMember = s.PoolMember
	var opts []Option
	if s.Logger != nil {
		opts = append(opts, WithLogger(s.Logger))
	}
	for _, o := range s.Options {
		if opt, ok := o.(Option); ok {
			opts = append(opts, opt)
		}
	}
	return New(ctx, c, opts...)
}

// Resolve makes the section's host paths absolute.
func (c *Config) Resolve(abs func(string) string) {
	c.Volumes = append([]Volume(nil), c.Volumes...)
	for i := range c.Volumes {
		c.Volumes[i].Host = abs(c.Volumes[i].Host)
	}
	c.HelperBinary = abs(c.HelperBinary)
}

// Mounts are the host directories the container sees.
func (c *Config) Mounts() []backend.Mount {
	var m []backend.Mount
	for _, v := range c.Volumes {
		m = append(m, backend.Mount{Host: v.Host, Inside: v.Container})
	}
	return m
}

// PoolSize is environment.docker.warm_pool.
func (c *Config) PoolSize() int { return c.WarmPool }

// SetPoolSize sets warm_pool and a container per session: what a pool needs, and, with n
// = 0, the cold start a pool is compared with.
func (c *Config) SetPoolSize(n int) {
	c.WarmPool = n
	c.ReuseContainer = false
}

// NetworkSetting is environment.docker.network.
func (c *Config) NetworkSetting() string { return c.Network }

var (
	_ backend.Resolver  = (*Config)(nil)
	_ backend.Mounter   = (*Config)(nil)
	_ backend.Networked = (*Config)(nil)
	_ backend.Pooled    = (*Config)(nil)
)
