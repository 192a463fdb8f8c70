package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
	_ "github.com/airlock-dev/airlock/backend/all" // every backend of the build registers its record
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/envpool"
	"github.com/airlock-dev/airlock/metrics"
)

// Section returns a copy of the config's [environment.KIND] for the configured kind, its
// paths resolved against the config file: what the backend's record opens.
func section(cfg *configs.Config) (backend.Record, any, error) {
	kind := cfg.Environment.Type
	r, ok := backend.Lookup(kind)
	if !ok {
		return backend.Record{}, nil, fmt.Errorf("environment.type: %q is not available in this build (have %s)", kind, strings.Join(backend.Kinds(), ", "))
	}
	sec := copySection(r, cfg.Environment.Section(kind))
	if res, ok := sec.(backend.Resolver); ok {
		res.Resolve(cfg.Abs)
	}
	return r, sec, nil
}

// copySection copies a section through its record's type, so that what one session's
// environment adjusts (a network, reuse) is its own.
func copySection(r backend.Record, sec any) any {
	cp := r.NewConfig()
	dst, src := reflect.ValueOf(cp).Elem(), reflect.ValueOf(sec).Elem()
	dst.Set(src)
	return cp
}

// open opens the configured backend for a session ("" for one shared by all): its record's
// constructor with the section, the common [environment] settings and what its record derives
// from the runtime's policy (see policy.go).
func open(ctx context.Context, cfg *configs.Config, session string, log hclog.Logger, m *metrics.Metrics) (backend.Environment, error) {
	return openAs(ctx, cfg, openKind{session: session}, log, m)
}

// openKind says what an environment is opened as.
type openKind struct {
	session string
	// member is true for a warm-pool member.
	member bool
	// private is true when the environment must be the session's alone (see
	// [WithPrivateEnvironments]).
	private bool
}

// openAs is open, for a warm-pool member or a private environment as k says.
func openAs(ctx context.Context, cfg *configs.Config, k openKind, log hclog.Logger, m *metrics.Metrics) (backend.Environment, error) {
	session := k.session
	r, sec, err := section(cfg)
	if err != nil {
		return nil, err
	}
	var extra []any
	if r.Derive != nil {
		pol := backendPolicy(cfg, session, log, m)
		pol.Private = k.private
		if extra, err = r.Derive(sec, pol); err != nil {
			return nil, err
		}
	}
	e := cfg.Environment
	return r.Open(ctx, backend.Settings{
		Section:        sec,
		Workspace:      cfg.WorkspaceDir(),
		DefaultTimeout: e.Timeout.D(),
		MaxOutputBytes: e.MaxOutputBytes,
		EnvPassthrough: e.EnvPassthrough,
		KillGrace:      e.KillGrace.D(),
		Session:        session,
		Options:        extra,
		Logger:         log,
		PoolMember:     k.member,
	})
}

// OpenEnvironment opens the backend environment.type names, on its own, outside any engine:
// for `airlock bench` and tools that only run commands. session is "" for an environment not
// tied to a session.
func OpenEnvironment(ctx context.Context, cfg *configs.Config, session string, log hclog.Logger) (backend.Environment, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return open(ctx, cfg, session, log, nil)
}

// environments hands sessions their environment: the one shared by all, or one of their own
// for a backend that has one per session.
type environments struct {
	cfg    *configs.Config
	log    hclog.Logger
	rec    backend.Record
	sec    any // resolved section, for mounts
	shared backend.Environment
	// pool keeps ready environments for sessions without a name, when the backend's
	// section asks for a warm pool (see package envpool); nil otherwise.
	pool *envpool.Pool
	// metrics counts what the environments' egress proxies decide (nil: not counted).
	metrics *metrics.Metrics
	// private makes each session's environment its own (see [WithPrivateEnvironments]).
	private bool
}

func openEnvironments(ctx context.Context, cfg *configs.Config, log hclog.Logger, m *metrics.Metrics, private bool) (*environments, error) {
	r, sec, err := section(cfg)
	if err != nil {
		return nil, err
	}
	v := &environments{cfg: cfg, log: log, rec: r, sec: sec, metrics: m, private: private}
	if !r.PerSession {
		if v.shared, err = open(ctx, cfg, "", log, m); err != nil {
			return nil, err
		}
	}
	if p, ok := sec.(backend.Pooled); ok && r.WarmPool && p.PoolSize() > 0 {
		v.pool = envpool.New(p.PoolSize(), v.makeMember, log)
	}
	return v, nil
}

// makeMember opens one warm-pool member: what a session without a name would get.
func (v *environments) makeMember(ctx context.Context) (backend.Claimer, error) {
	env, err := openAs(ctx, v.cfg, openKind{member: true, private: v.private}, v.log, v.metrics)
	if err != nil {
		return nil, err
	}
	c, ok := env.(backend.Claimer)
	if !ok {
		return nil, errors.Join(fmt.Errorf("environment.type %q: a pool member cannot be claimed", v.rec.Kind), env.Close(ctx))
	}
	return c, nil
}

// forSession returns the environment of a session, and whether the session owns it (and so
// closes it). key is the session's ID for a named session, "" for an ephemeral one: a named
// session finds its own environment again in a later process where the backend keeps one.
// An ephemeral session takes a warm-pool member when one is ready (id, the session's ID, is
// what the claim records); a named one, whose environment is its own by name, never does.
func (v *environments) forSession(ctx context.Context, key, id string) (backend.Environment, bool, error) {
	if v.shared != nil {
		return v.shared, false, nil
	}
	if v.pool != nil && key == "" {
		if env, ok := v.pool.Take(ctx, id); ok {
			return env, true, nil
		}
	}
	env, err := openAs(ctx, v.cfg, openKind{session: key, private: v.private}, v.log, v.metrics)
	return env, err == nil, err
}

// hostMounts are the host directories the environment sees and where; onHost is true when
// its commands see host paths as they are.
func (v *environments) hostMounts() (mounts []backend.Mount, onHost bool) {
	if h, ok := v.sec.(backend.OnHost); ok && h.HostWorkspace() {
		return nil, true
	}
	if m, ok := v.sec.(backend.Mounter); ok {
		return m.Mounts(), false
	}
	return nil, false
}

func (v *environments) close(ctx context.Context) error {
	var errs []error
	if v.pool != nil {
		errs = append(errs, v.pool.Close(ctx))
	}
	if v.shared != nil {
		errs = append(errs, v.shared.Close(ctx))
	}
	return errors.Join(errs...)
}

// WaitWarmPool waits until the warm pool holds its full size of ready environments (for
// `airlock bench --session-start` and tests); at once when there is no pool.
func (e *Engine) WaitWarmPool(ctx context.Context) error {
	if e.envs.pool == nil {
		return nil
	}
	return e.envs.pool.WaitReady(ctx, e.envs.pool.Size())
}

// WarmPoolStats says what the warm pool did; ok is false when there is none.
func (e *Engine) WarmPoolStats() (s envpool.Stats, ok bool) {
	if e.envs.pool == nil {
		return s, false
	}
	return e.envs.pool.Stats(), true
}
