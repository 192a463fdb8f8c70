package local

import (
	"context"
	_ "embed"
	"errors"

	"github.com/airlock-dev/airlock/backend"
)

//go:embed config.schema.json
var configSchema []byte

// Section is the [environment.local] table.
type Section struct {
	// Sandbox is how commands are confined: "auto" (default: the helper in namespaces of
	// its own wherever the host can make them, else Landlock + seccomp wherever the kernel
	// has it), "namespaces" (refuse to run without them), "landlock" (Landlock + seccomp
	// required, no namespaces) or "off".
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
	// Commands run in the session's helper, which reaps and kills what escapes a command's
	// group (it is their subreaper, and in namespace mode their PID namespace's init).
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
			c.Network, c.Env, c.OnClose, c.Attribute, c.ServeCall = o.Mode, o.Env, o.OnClose, o.Attribute, o.ServeCall
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
