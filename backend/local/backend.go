package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/sandbox"
	"github.com/airlock-dev/airlock/backend/sockowner"
)

var _ backend.Environment = (*Env)(nil)

// Config is the local backend's configuration.
type Config struct {
	// Workspace is the host directory commands run in; it must exist.
	Workspace string
	// DefaultTimeout applies when a request sets none.
	DefaultTimeout time.Duration
	// MaxOutputBytes caps each stream when a request sets none.
	MaxOutputBytes int64
	// EnvPassthrough lists the host variables (names or globs) that reach commands.
	EnvPassthrough []string
	// Shell runs Request.Command as Shell -c COMMAND.
	Shell string
	// KillGrace is how long a process group has between TERM and KILL.
	KillGrace time.Duration
	// Sandbox confines commands with the kernel (default: auto).
	Sandbox SandboxConfig
	// Network is what commands can reach: "" or "host" the host's network, "none" nothing
	// (each command starts in a fresh network namespace; see network.go). New refuses a mode
	// the host cannot deliver.
	Network string
	// Env holds variables every command gets on top of the passthrough (the egress proxy's
	// HTTP_PROXY in [network] mode "allowlist"); a request's own variables win.
	Env map[string]string
	// OnClose, when set, runs at Close (stops what was started for this environment, such
	// as its egress proxy).
	OnClose func() error
	// Attribute, when set, is handed the function that names the call behind a connection
	// to the egress proxy (which command holds its client end; see package sockowner):
	// every command of a call is tracked for it while it runs.
	Attribute func(backend.ConnOwner)
}

// DefaultConfig returns the defaults that Validate fills in.
func DefaultConfig() Config {
	return Config{
		Workspace:      ".",
		DefaultTimeout: 120 * time.Second,
		MaxOutputBytes: backend.DefaultMaxOutputBytes,
		EnvPassthrough: backend.DefaultPassthrough,
		Shell:          "/bin/sh",
		KillGrace:      time.Second,
	}
}

// withDefaults fills zero fields from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Workspace == "" {
		c.Workspace = d.Workspace
	}
	if c.DefaultTimeout == 0 {
		c.DefaultTimeout = d.DefaultTimeout
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = d.MaxOutputBytes
	}
	if c.EnvPassthrough == nil {
		c.EnvPassthrough = d.EnvPassthrough
	}
	if c.Shell == "" {
		c.Shell = d.Shell
	}
	if c.KillGrace == 0 {
		c.KillGrace = d.KillGrace
	}
	return c
}

// Validate reports a configuration that cannot work, naming the field.
func (c Config) Validate() error {
	switch {
	case c.DefaultTimeout < 0:
		return errors.New("local: timeout: must not be negative")
	case c.MaxOutputBytes < 0:
		return errors.New("local: max_output_bytes: must not be negative")
	case c.KillGrace < 0:
		return errors.New("local: kill_grace: must not be negative")
	case c.Network != "" && c.Network != NetworkHost && c.Network != NetworkNone:
		return errors.New(`local: network: must be "host" or "none"`)
	}
	return nil
}

// Option adjusts construction.
type Option func(*options) error

type options struct {
	logger hclog.Logger
	probe  sandbox.Probe
}

// WithLogger sets the logger (default: none).
func WithLogger(l hclog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("local: nil logger")
		}
		o.logger = l
		return nil
	}
}

// Env is a local workspace.
type Env struct {
	cfg       Config
	workspace string // absolute, symlinks resolved
	policy    backend.EnvPolicy
	log       hclog.Logger
	// isolate, when set, puts each command in namespaces of its own (Network "none").
	isolate func(*syscall.SysProcAttr)

	// owners tracks which call each running command is for, when refusals of the egress
	// proxy are attributed to calls (Config.Attribute).
	owners *sockowner.Table

	sandbox     *sandbox.Sandbox
	sandboxNote string
	tempDir     string

	mu     sync.Mutex
	closed bool

	// envMu guards the environment built last for a request without variables of its own,
	// and Airlock's environment it was built from (see commandEnv).
	envMu   sync.Mutex
	envHost []string
	envLast []string
}

// New checks cfg and returns an environment rooted at its workspace.
func New(cfg Config, opts ...Option) (*Env, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{logger: hclog.NewNullLogger()}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	abs, err := filepath.Abs(cfg.Workspace)
	if err != nil {
		return nil, fmt.Errorf("local: workspace: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("local: workspace: %w", err)
	}
	if fi, err := os.Stat(real); err != nil {
		return nil, fmt.Errorf("local: workspace: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("local: workspace: %s is not a directory", real)
	}
	// As Docker refuses to mount them: commands and file tools would work on the host's own
	// files (`--config /dev/null` puts the workspace in /dev).
	if why := backend.SystemDir(real); why != "" {
		shown := real
		if real != filepath.Clean(abs) {
			shown = fmt.Sprintf("%s (resolved from %s)", real, abs)
		}
		return nil, fmt.Errorf("local: workspace: refused: %s %s; use a project directory (environment.workspace, relative to the config file's directory)", shown, why)
	}
	// Commands inherit this process's umask: it is set to the one every backend gives them.
	// Airlock's own files (ledger, session state) are created with explicit modes.
	syscall.Umask(backend.Umask)
	e := &Env{
		cfg:       cfg,
		workspace: real,
		policy:    backend.EnvPolicy{Passthrough: cfg.EnvPassthrough},
		log:       o.logger.Named("local"),
	}
	if err := e.openSandbox(cfg.Sandbox, o.probe); err != nil {
		return nil, err
	}
	if n := cfg.Sandbox.Network; len(n.ConnectTCP)+len(n.BindTCP) > 0 && !e.sandbox.Enforced() {
		_ = e.sandbox.Close()
		_ = os.RemoveAll(e.tempDir)
		return nil, errors.New(`local: [network] mode = "allowlist" confines commands to the egress proxy's port with Landlock network rules, and the kernel sandbox is not enforced here (` + e.sandbox.Notes()[0] + `); use the docker backend, or mode "none" or "open"`)
	}
	n := cfg.Sandbox.Network
	sandboxDeniesNetwork := e.sandbox.Enforced() && !n.Unrestricted && len(n.ConnectTCP)+len(n.BindTCP) == 0
	// With the kernel sandbox enforcing "no network" (Landlock: no TCP connect or bind;
	// seccomp: no UDP, raw or foreign sockets, and no new namespaces), none is delivered;
	// otherwise each command gets a network namespace of its own.
	if cfg.Network == NetworkNone && !sandboxDeniesNetwork {
		if err := probeNetworkNone(cfg.Shell); err != nil {
			_ = e.sandbox.Close()
			_ = os.RemoveAll(e.tempDir)
			return nil, err
		}
		e.isolate = netnsIsolation()
	}
	if cfg.Attribute != nil {
		e.owners = sockowner.New()
		cfg.Attribute(e.owners.Owner)
	}
	return e, nil
}

// Workspace returns the workspace's absolute host path with symlinks resolved.
func (e *Env) Workspace() string { return e.workspace }

// Describe reports a host process environment and what the kernel sandbox enforces.
func (e *Env) Describe() backend.Description {
	sb := e.sandbox.Enforced()
	var scratch []string
	if e.tempDir != "" {
		scratch = []string{e.tempDir}
	}
	return backend.Description{
		Scratch:   scratch,
		TempDir:   e.tempDir,
		Kind:      "local",
		Mode:      "process",
		Workspace: e.workspace,
		Target:    e.workspace,
		Capabilities: backend.Capabilities{
			WritableHostMounts: true,
			ProcessTreeKill:    true,
			KernelSandbox:      sb,
			HidesDenyNames:     e.sandbox.HidesDenyNames(),
			NetworkIsolation:   sb && !e.cfg.Sandbox.Network.Unrestricted || e.isolate != nil,
		},
		Limits: backend.Limits{
			DefaultTimeout: e.cfg.DefaultTimeout,
			MaxOutputBytes: e.cfg.MaxOutputBytes,
		},
		Notes: e.notes(),
	}
}

func (e *Env) notes() []string {
	n := e.sandboxNotes()
	if e.isolate != nil {
		n = append(n, "each command starts in a fresh network namespace: no network ([network] mode = \"none\")")
	}
	return n
}

// Close marks the environment closed and removes the session's temp dir. Commands still
// running finish on their own terms.
func (e *Env) Close(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	var stop error
	if e.cfg.OnClose != nil {
		stop = e.cfg.OnClose()
	}
	return errors.Join(e.sandbox.Close(), os.RemoveAll(e.tempDir), stop)
}

func (e *Env) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}
