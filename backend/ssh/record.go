package ssh

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
		Kind:      "ssh",
		Summary:   "a remote host over one verified SSH connection",
		Schema:    configSchema,
		NewConfig: func() any { c := DefaultConfig(); return &c },
		Derive:    derive,
		Open:      open,
		Modes:     []string{ModeAgent, ModeSession},
		SetMode: func(section any, mode string) error {
			c := section.(*Config)
			switch mode {
			case "", ModeAgent:
				c.Mode = ModeAuto
			case ModeSession, "exec":
				c.Mode = ModeSession
			default:
				return fmt.Errorf("mode %q: want %s or %s", mode, ModeAgent, ModeSession)
			}
			return nil
		},
		Capabilities: backend.Capabilities{ProcessTreeKill: true, ResidentHelper: true},
		Commands:     []backend.Command{trustCommand},
	})
}

// derive applies [network] mode. The remote host's network is not Airlock's to cut: none
// and open run with it as it is, which Describe and the README say. allowlist would route
// commands through the egress proxy over a reverse-forwarded port; that is not built, so it
// is refused rather than run with the remote network open.
func derive(_ any, p backend.Policy) ([]any, error) {
	if p.Network.Mode == backend.NetworkAllowlist {
		return nil, errors.New(`ssh: [network] mode = "allowlist" is not supported on the ssh backend yet (the egress proxy over a reverse-forwarded port is not built); the remote host's network is not Airlock's to cut — use mode "none" or "open" (both leave it as it is) or the docker backend`)
	}
	return nil, nil
}

// open connects from a record's settings; Options of type [Option] are applied.
func open(ctx context.Context, s backend.Settings) (backend.Environment, error) {
	c := *s.Section.(*Config)
	c.DefaultTimeout = s.DefaultTimeout
	c.MaxOutputBytes = s.MaxOutputBytes
	c.KillGrace = s.KillGrace
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

// Resolve makes the section's local paths absolute.
func (c *Config) Resolve(abs func(string) string) {
	c.KeyPath = abs(c.KeyPath)
	c.KnownHosts = abs(c.KnownHosts)
	c.AgentBinary = abs(c.AgentBinary)
}

var _ backend.Resolver = (*Config)(nil)
