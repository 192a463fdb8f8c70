package ssh

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/netip"

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
		// The resident helper's key was named for the agent, which it is not.
		Renamed: map[string]string{"agent_binary": "helper_binary"},
		Derive:  derive,
		Open:    open,
		Modes:   []string{ModeHelper, ModeSession},
		SetMode: func(section any, mode string) error {
			c := section.(*Config)
			switch mode {
			case "", ModeHelper, backend.OldModeHelper:
				c.Mode = ModeAuto
			case ModeSession, "exec":
				c.Mode = ModeSession
			default:
				return fmt.Errorf("mode %q: want %s or %s", mode, ModeHelper, ModeSession)
			}
			return nil
		},
		Capabilities: backend.Capabilities{ProcessTreeKill: true, ResidentHelper: true},
		Commands:     []backend.Command{trustCommand},
	})
}

// derive gives the helper's sandbox the policy's roots (see [WithRoots]) and applies
// [network] mode. The remote host's network is not Airlock's to cut: none and open run with
// it as it is, which Describe and docs/network.md say. allowlist starts the
// egress proxy on the Airlock host's loopback; the backend reaches it from the remote host
// through a reverse-forwarded port on the remote loopback and points commands at it with
// HTTP(S)_PROXY (see [WithEgress]).
func derive(_ any, p backend.Policy) ([]any, error) {
	opts := []any{Option(WithRoots(p.Paths.ConfiguredReadRoots, p.Paths.ConfiguredWriteRoots))}
	if p.Network.Mode != backend.NetworkAllowlist {
		return opts, nil
	}
	if p.Network.Proxy == nil {
		return nil, errors.New(`ssh: [network] mode = "allowlist" without an egress proxy`)
	}
	eg, err := p.Network.Proxy(context.Background(), netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		return nil, err
	}
	return append(opts, egressOption{eg}), nil
}

// egressOption carries the proxy derive started to open, which stops it when New fails.
type egressOption struct{ eg backend.Egress }

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
	var stop func() error
	for _, o := range s.Options {
		if opt, ok := o.(Option); ok {
			opts = append(opts, opt)
		}
		if eg, ok := o.(egressOption); ok {
			opts, stop = append(opts, WithEgress(eg.eg)), eg.eg.Stop
		}
	}
	env, err := New(ctx, c, opts...)
	if err != nil && stop != nil {
		// New never took the proxy over: stop what derive started.
		_ = stop()
	}
	return env, err
}

// Resolve makes the section's local paths absolute.
func (c *Config) Resolve(abs func(string) string) {
	c.KeyPath = abs(c.KeyPath)
	c.KnownHosts = abs(c.KnownHosts)
	c.HelperBinary = abs(c.HelperBinary)
}

var _ backend.Resolver = (*Config)(nil)
