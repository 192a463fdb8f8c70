package kubernetes

import (
	"context"
	_ "embed"
	"errors"

	"github.com/airlock-dev/airlock/backend"
)

//go:embed config.schema.json
var configSchema []byte

func init() {
	backend.Register(backend.Record{
		Kind:      "kubernetes",
		Summary:   "a hardened pod per session on a Kubernetes cluster, through the API",
		Schema:    configSchema,
		NewConfig: func() any { c := DefaultConfig(); return &c },
		// The resident helper's key was named for the agent, which it is not.
		Renamed: map[string]string{"agent_binary": "helper_binary"},
		// Only what must be refused before any pod opens; New checks the rest.
		Validate:   func(section any) error { return section.(*Config).validatePool() },
		Derive:     derive,
		Open:       open,
		PerSession: true,
		WarmPool:   true,
		GC: func(ctx context.Context, section any, o backend.GCOptions) ([]backend.GCItem, error) {
			return GC(ctx, *section.(*Config), o)
		},
		Capabilities: backend.Capabilities{FilesystemIsolation: true, NetworkIsolation: true, ProcessTreeKill: true, ResidentHelper: true},
	})
}

// derive applies [network] mode to the session's section; allowlist brings the session's
// egress proxy (see [WithEgressProxy]).
func derive(section any, p backend.Policy) ([]any, error) {
	c := section.(*Config)
	switch p.Network.Mode {
	case backend.NetworkAllowlist:
		if p.Network.Proxy == nil {
			return nil, errors.New(`[network] mode = "allowlist" without an egress proxy`)
		}
		c.Network = backend.NetworkAllowlist
		return []any{WithEgressProxy(p.Network.Proxy)}, nil
	case "":
		c.Network = backend.NetworkNone
	default:
		c.Network = p.Network.Mode
	}
	return nil, nil
}

// open starts the pod of a session from its record's settings.
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
