package ssh

import (
	"context"
	_ "embed"
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
