package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/helper"
	"github.com/airlock-dev/airlock/backend/sandbox"
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
	// to the egress proxy (which command holds its client end; see package sockowner). The
	// helper runs commands now, out of this process's sight: it is kept for the record's
	// sake and refusals through the fixed port (fallback mode) are unattributed.
	Attribute func(backend.ConnOwner)
	// ServeCall, when set ([network] mode "allowlist"), answers as the egress proxy on a
	// socket of one call's own: the helper then runs in a network namespace of its own and
	// relays each command's connections there.
	ServeCall func(ln net.Listener, callID string) (release func())
}

// DefaultConfig returns the defaults that Validate fills in.
func DefaultConfig() Config {
	return Config{
		Workspace:      ".",
		DefaultTimeout: backend.DefaultTimeout,
		MaxOutputBytes: backend.DefaultMaxOutputBytes,
		EnvPassthrough: backend.DefaultPassthrough,
		Shell:          "/bin/sh",
		KillGrace:      backend.DefaultKillGrace,
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
	case c.Sandbox.Mode != "" && c.Sandbox.Mode != sandbox.ModeAuto && c.Sandbox.Mode != sandbox.ModeNamespaces &&
		c.Sandbox.Mode != sandbox.ModeLandlock && c.Sandbox.Mode != sandbox.ModeOff:
		return fmt.Errorf("local: sandbox: %q is not one of auto, namespaces, landlock, off", c.Sandbox.Mode)
	}
	return nil
}

// Option adjusts construction.
type Option func(*options) error

type options struct {
	logger hclog.Logger
	probe  sandbox.Probe
	// noNamespaces, when set, plays a host that refuses the helper namespaces, saying so.
	noNamespaces string
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

// Env is a local workspace. Its commands and file operations run in a resident helper, a
// child process started once per session (see sandbox.go): Airlock's own process runs
// nothing of the agent's.
type Env struct {
	cfg       Config
	workspace string // absolute, symlinks resolved
	top       fileID // the workspace directory New resolved (see resolveDir)
	policy    backend.EnvPolicy
	log       hclog.Logger

	helper    *helper.Helper
	isolation string // isolationNamespaces or isolationChild
	// namespace is what the helper's namespaces were made from, in namespace mode.
	namespace *sandbox.Namespace
	fallback  string // why the helper has no namespaces, in mode auto
	// noNamespaces plays a host without namespaces (WithoutNamespaces).
	noNamespaces string
	note         string // the line every result carries
	// desc is what Describe reports: everything in it is settled once New returns (the
	// configuration, the helper and what its hello said), so it is built there once.
	desc      backend.Description
	tempDir   string
	egressDir []string // the calls' egress sockets' directory, with ServeCall
	// guards and writeRoots explain a refusal in a result's notes (explain.go).
	guards     []guarded
	writeRoots []string
	// hidesDenyNames: commands cannot read the deny_names matches the helper's start found
	// (the scan was complete) nor the credential stores (see Capabilities.HidesDenyNames).
	hidesDenyNames bool

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
	var top unix.Stat_t
	if err := unix.Lstat(real, &top); err != nil {
		return nil, fmt.Errorf("local: workspace: %w", &os.PathError{Op: "lstat", Path: real, Err: err})
	} else if top.Mode&unix.S_IFMT != unix.S_IFDIR {
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
		top:       fileID{dev: top.Dev, ino: top.Ino},
		policy:    backend.EnvPolicy{Passthrough: cfg.EnvPassthrough},
		log:       o.logger.Named("local"),
	}
	if err := e.setupEgress(); err != nil {
		return nil, err
	}
	e.noNamespaces = o.noNamespaces
	if err := e.startHelper(cfg.Sandbox, o.probe); err != nil {
		e.removeDirs()
		return nil, err
	}
	if err := e.checkNetwork(); err != nil {
		_ = e.helper.Close()
		e.removeDirs()
		return nil, err
	}
	e.note = e.summary()
	e.desc = e.describe()
	return e, nil
}

// noNetwork reports whether commands are to have no network at all: [network] mode "none",
// or no mode given and a sandbox that grants no TCP.
func (e *Env) noNetwork() bool {
	n := e.cfg.Sandbox.Network
	switch {
	case e.cfg.Network == NetworkNone:
		return true
	case e.cfg.Network != "" || e.cfg.ServeCall != nil || e.cfg.Sandbox.Mode == sandbox.ModeOff:
		return false
	}
	return !n.Unrestricted && len(n.ConnectTCP)+len(n.BindTCP) == 0
}

// checkNetwork refuses a network mode the helper does not deliver: without its own network
// namespace, none and allowlist rest on Landlock's TCP rules, which must then be enforced.
func (e *Env) checkNetwork() error {
	if e.isolation == isolationNamespaces || e.enforced() {
		return nil
	}
	n := e.cfg.Sandbox.Network
	why := e.fallback
	if why == "" {
		why = `sandbox = "` + string(e.cfg.Sandbox.Mode) + `"`
	}
	switch {
	case len(n.ConnectTCP)+len(n.BindTCP) > 0:
		return errors.New(`local: [network] mode = "allowlist" needs the helper's network namespace or Landlock's TCP rules, and neither is available here (` + why + `); use the docker backend, or mode "none" or "open"`)
	case e.cfg.Network == NetworkNone && !n.Unrestricted:
		return errors.New(`local: [network] mode = "none" needs the helper's network namespace or Landlock's TCP rules, and neither is available here (` + why + `); run as root, enable user namespaces, use the docker backend, or set [network] mode = "open"`)
	}
	return nil
}

func (e *Env) removeDirs() {
	_ = os.RemoveAll(e.tempDir)
	for _, d := range e.egressDir {
		_ = os.RemoveAll(d)
	}
}

// Workspace returns the workspace's absolute host path with symlinks resolved.
func (e *Env) Workspace() string { return e.workspace }

// Describe reports a host process environment and what the helper and the kernel sandbox
// enforce.
//
// It is called several times in each call (the pipeline, the path policy, the file tools),
// so it returns the description New built, with slices of the caller's own.
func (e *Env) Describe() backend.Description {
	d := e.desc
	d.Scratch = slices.Clone(d.Scratch)
	d.Notes = slices.Clone(d.Notes)
	return d
}

func (e *Env) describe() backend.Description {
	sb := e.enforced()
	ns := e.isolation == isolationNamespaces
	var scratch []string
	if e.tempDir != "" {
		scratch = []string{e.tempDir}
	}
	return backend.Description{
		Scratch:   scratch,
		TempDir:   e.tempDir,
		Kind:      "local",
		Mode:      "helper-" + e.isolation,
		Workspace: e.workspace,
		Target:    e.workspace,
		Capabilities: backend.Capabilities{
			WritableHostMounts: true,
			ProcessTreeKill:    true,
			ResidentHelper:     true,
			KernelSandbox:      sb,
			HidesDenyNames:     e.hidesDenyNames,
			NetworkIsolation:   ns && e.noNetwork() || sb && !e.cfg.Sandbox.Network.Unrestricted && e.cfg.ServeCall == nil,
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
	if e.isolation == isolationNamespaces && e.noNetwork() {
		n = append(n, "the helper and its commands are in a network namespace of their own: no network ([network] mode = \"none\")")
	}
	if s := helper.SiblingNote(); s != "" && e.helper != nil {
		n = append(n, s)
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
	err := e.helper.Close()
	e.removeDirs()
	return errors.Join(err, stop)
}

func (e *Env) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}
