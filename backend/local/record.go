package local

import (
	"context"
	_ "embed"
	"errors"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/procgroup"
)

//go:embed config.schema.json
var configSchema []byte

// Section is the [environment.local] table.
type Section struct {
	// Sandbox is the kernel sandbox for commands: "auto" (default: Landlock wherever the
	// kernel has it), "landlock" (refuse to run without it) or "off".
	Sandbox string `toml:"sandbox"`
}

func init() {
	backend.Register(backend.Record{
		Kind:         "local",
		Summary:      "child processes in the workspace on this host",
		Schema:       configSchema,
		NewConfig:    func() any { return &Section{Sandbox: "auto"} },
		Derive:       derive,
		Open:         open,
		Capabilities: backend.Capabilities{ProcessTreeKill: true},
	})
}

// open starts the local environment from a record's settings: the [SandboxConfig] and
// [NetworkConfig] derive made are taken from the Options, and [Option]s are applied.
func open(_ context.Context, s backend.Settings) (backend.Environment, error) {
	// airlock's only child processes are the commands it runs: as their subreaper it
	// inherits what escapes a command's process group (setsid) and kills it.
	if err := procgroup.EnableSubreaper(); err != nil && s.Logger != nil {
		s.Logger.Warn("subreaper unavailable: processes that call setsid may outlive their command", "error", err)
	}
	c := Config{
		Workspace:      s.Workspace,
		DefaultTimeout: s.DefaultTimeout,
		MaxOutputBytes: s.MaxOutputBytes,
		EnvPassthrough: s.EnvPassthrough,
		KillGrace:      s.KillGrace,
	}
	var opts []Option
	if s.Logger != nil {
		opts = append(opts, WithLogger(s.Logger))
	}
	for _, o := range s.Options {
		switch o := o.(type) {
		case SandboxConfig:
			c.Sandbox = o
		case NetworkConfig:
			c.Network, c.Env, c.OnClose, c.Attribute = o.Mode, o.Env, o.OnClose, o.Attribute
		case Option:
			opts = append(opts, o)
		}
	}
	env, err := New(c, opts...)
	if err != nil && c.OnClose != nil {
		err = errors.Join(err, c.OnClose())
	}
	return env, err
}

// HostWorkspace marks the local backend's environment as working on host paths, so the
// runtime protects Airlock's own files at their host paths.
func (*Section) HostWorkspace() bool { return true }
