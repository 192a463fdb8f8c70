package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/backend/procgroup"
	"github.com/airlock-dev/airlock/backend/ssh"
	"github.com/airlock-dev/airlock/configs"
)

// backendFactory opens the environment a config describes for a session key ("" for an
// environment shared by every session).
type backendFactory struct {
	open       func(ctx context.Context, cfg *configs.Config, session string, log hclog.Logger) (backend.Environment, error)
	perSession bool
	// mounts are the host directories the environment sees, and where; onHost is true when
	// it works on host paths directly.
	mounts func(cfg *configs.Config) (m []mount, onHost bool)
}

type mount struct{ Host, Inside string }

var backendFactories = map[string]backendFactory{
	"local": {
		open: func(_ context.Context, cfg *configs.Config, _ string, log hclog.Logger) (backend.Environment, error) {
			// airlock's only child processes are the commands it runs: as their subreaper it
			// inherits what escapes a command's process group (setsid) and kills it.
			if err := procgroup.EnableSubreaper(); err != nil {
				log.Warn("subreaper unavailable: processes that call setsid may outlive their command", "error", err)
			}
			e := cfg.Environment
			return local.New(local.Config{
				Workspace:      cfg.WorkspaceDir(),
				DefaultTimeout: e.Timeout.D(),
				MaxOutputBytes: e.MaxOutputBytes,
				EnvPassthrough: e.EnvPassthrough,
				KillGrace:      e.KillGrace.D(),
				Sandbox:        localSandbox(cfg),
			}, append(localOptions(), local.WithLogger(log))...)
		},
		mounts: func(*configs.Config) ([]mount, bool) { return nil, true },
	},
	"docker": {
		open: func(ctx context.Context, cfg *configs.Config, session string, log hclog.Logger) (backend.Environment, error) {
			c := dockerConfig(cfg)
			c.Session = session
			netOpts, err := dockerNetwork(cfg, &c, session, log)
			if err != nil {
				return nil, err
			}
			return docker.New(ctx, c, append([]docker.Option{docker.WithLogger(log)}, netOpts...)...)
		},
		perSession: true,
		mounts: func(cfg *configs.Config) ([]mount, bool) {
			var m []mount
			for _, v := range cfg.Environment.Docker.Volumes {
				m = append(m, mount{Host: cfg.Abs(v.Host), Inside: v.Container})
			}
			return m, false
		},
	},
	"ssh": {
		open: func(ctx context.Context, cfg *configs.Config, _ string, log hclog.Logger) (backend.Environment, error) {
			return ssh.New(ctx, sshConfig(cfg), ssh.WithLogger(log))
		},
		mounts: func(*configs.Config) ([]mount, bool) { return nil, false },
	},
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

// sshConfig is [environment.ssh] with local paths resolved against the config file and the
// general [environment] limits filled in.
func sshConfig(cfg *configs.Config) ssh.Config {
	e := cfg.Environment
	c := e.SSH
	c.KeyPath = cfg.Abs(c.KeyPath)
	c.KnownHosts = cfg.Abs(c.KnownHosts)
	c.AgentBinary = cfg.Abs(c.AgentBinary)
	c.DefaultTimeout = e.Timeout.D()
	c.MaxOutputBytes = e.MaxOutputBytes
	c.KillGrace = e.KillGrace.D()
	return c
}

// OpenEnvironment opens the backend environment.type names, on its own, outside any engine:
// for `airlock bench` and tools that only run commands. session is "" for an environment not
// tied to a session.
func OpenEnvironment(ctx context.Context, cfg *configs.Config, session string, log hclog.Logger) (backend.Environment, error) {
	f, err := factory(cfg.Environment.Type)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return f.open(ctx, cfg, session, log)
}

func factory(kind string) (backendFactory, error) {
	f, ok := backendFactories[kind]
	if !ok {
		kinds := make([]string, 0, len(backendFactories))
		for k := range backendFactories {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		return backendFactory{}, fmt.Errorf("environment.type: %q is not available in this build (have %s)", kind, strings.Join(kinds, ", "))
	}
	return f, nil
}

// environments hands sessions their environment: the one shared by all, or one of their own
// for a backend that has one per session.
type environments struct {
	cfg    *configs.Config
	log    hclog.Logger
	f      backendFactory
	shared backend.Environment
}

func openEnvironments(ctx context.Context, cfg *configs.Config, log hclog.Logger) (*environments, error) {
	f, err := factory(cfg.Environment.Type)
	if err != nil {
		return nil, err
	}
	v := &environments{cfg: cfg, log: log, f: f}
	if !f.perSession {
		if v.shared, err = f.open(ctx, cfg, "", log); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// forSession returns the environment of a session, and whether the session owns it (and so
// closes it). key is the session's ID for a named session, "" for an ephemeral one: a named
// session finds its own environment again in a later process where the backend keeps one.
func (v *environments) forSession(ctx context.Context, key string) (backend.Environment, bool, error) {
	if v.shared != nil {
		return v.shared, false, nil
	}
	env, err := v.f.open(ctx, v.cfg, key, v.log)
	return env, err == nil, err
}

func (v *environments) hostMounts() ([]mount, bool) { return v.f.mounts(v.cfg) }

func (v *environments) close(ctx context.Context) error {
	if v.shared == nil {
		return nil
	}
	return v.shared.Close(ctx)
}
