package ssh

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
)

var _ backend.Environment = (*Env)(nil)

// Modes name how commands are started.
const (
	// ModeAuto uses the resident helper when it can be installed and sessions otherwise.
	ModeAuto = "auto"
	// ModeSession opens one SSH session per command.
	ModeSession = "session"
	// ModeHelper is what [Env.Describe] reports when the resident helper is in use, "helper"
	// (bench --mode also takes its former name, "agent").
	ModeHelper = backend.ModeHelper
)

// Config is the [environment.ssh] section. The fields tagged toml:"-" come from the general
// [environment] section and are filled in by whoever builds the backend.
type Config struct {
	// Host is the remote host name or address.
	Host string `toml:"host"`
	// Port is the remote sshd port.
	Port int `toml:"port"`
	// User is the remote account commands run as.
	User string `toml:"user"`
	// KeyPath is a private key file (OpenSSH or PEM).
	KeyPath string `toml:"key_path"`
	// KeyPassphraseEnv names the host variable holding KeyPath's passphrase, if it has one.
	KeyPassphraseEnv string `toml:"key_passphrase_env"`
	// UseAgent also offers the keys of the ssh-agent at SSH_AUTH_SOCK.
	UseAgent bool `toml:"use_agent"`
	// KnownHosts is the OpenSSH known_hosts file host keys are checked against.
	KnownHosts string `toml:"known_hosts"`
	// JumpHost is an optional ProxyJump host, "[user@]host[:port]", verified against the same
	// known_hosts and authenticated with the same keys.
	JumpHost string `toml:"jump_host"`
	// ConnectTimeout bounds one dial and handshake.
	ConnectTimeout backend.Duration `toml:"connect_timeout"`
	// KeepaliveInterval is the time between keepalive@openssh.com requests; a request not
	// answered within the interval (at least a second) marks the connection dead.
	KeepaliveInterval backend.Duration `toml:"keepalive_interval"`
	// Workdir is the absolute remote directory commands run in; it is created if missing.
	Workdir string `toml:"workdir"`
	// LoginShell runs commands through the remote user's login shell (`$SHELL -l -c`), which
	// reads their profile; off, commands run under /bin/sh without it.
	LoginShell bool `toml:"login_shell"`
	// Mode is "auto" (resident helper when possible) or "session".
	Mode string `toml:"mode"`
	// HelperBinary is the local path of a static linux airlock binary uploaded as the
	// resident helper; empty means the running executable. A file may give it under its
	// former name, agent_binary (see the record's Renamed).
	HelperBinary string `toml:"helper_binary"`
	// OldKeys holds the notes on keys the file gave under a former name, for Describe.
	backend.OldKeys
	// Sandbox is the kernel sandbox the resident helper puts commands in on the remote host:
	// "auto" (default: wherever the remote kernel has Landlock), "landlock" (refuse to run
	// without it) or "off".
	Sandbox string `toml:"sandbox"`

	// DefaultTimeout applies when a request sets none.
	DefaultTimeout time.Duration `toml:"-"`
	// MaxOutputBytes caps each stream when a request sets none.
	MaxOutputBytes int64 `toml:"-"`
	// KillGrace is how long a process group has between TERM and KILL.
	KillGrace time.Duration `toml:"-"`
}

// DefaultConfig returns the defaults that New fills in for zero fields.
func DefaultConfig() Config {
	return Config{
		Port:              22,
		KnownHosts:        "~/.ssh/known_hosts",
		ConnectTimeout:    backend.Duration(10 * time.Second),
		KeepaliveInterval: backend.Duration(15 * time.Second),
		Mode:              ModeAuto,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Port == 0 {
		c.Port = d.Port
	}
	if c.KnownHosts == "" {
		c.KnownHosts = d.KnownHosts
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = d.ConnectTimeout
	}
	if c.KeepaliveInterval == 0 {
		c.KeepaliveInterval = d.KeepaliveInterval
	}
	if c.Mode == "" {
		c.Mode = d.Mode
	}
	if c.DefaultTimeout == 0 {
		c.DefaultTimeout = backend.DefaultTimeout
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = backend.DefaultMaxOutputBytes
	}
	if c.KillGrace == 0 {
		c.KillGrace = backend.DefaultKillGrace
	}
	return c
}

// Validate reports every setting that cannot work, each error naming its key. Zero values
// that have a default are accepted.
func (c Config) Validate() error {
	const p = "environment.ssh."
	var errs []error
	bad := func(key, msg string, args ...any) {
		errs = append(errs, fmt.Errorf(p+key+": "+msg, args...))
	}
	if c.Host == "" {
		bad("host", "required")
	} else if strings.ContainsAny(c.Host, " \t@/") {
		bad("host", "%q is not a host name or address", c.Host)
	}
	if c.Port < 0 || c.Port > 65535 {
		bad("port", "%d is not a TCP port", c.Port)
	}
	if c.User == "" {
		bad("user", "required")
	}
	if c.KeyPath == "" && !c.UseAgent {
		bad("key_path", "required unless use_agent is true")
	}
	if c.KeyPassphraseEnv != "" && !backend.ValidName(c.KeyPassphraseEnv) {
		bad("key_passphrase_env", "%q is not a variable name (give the name, not the passphrase)", c.KeyPassphraseEnv)
	}
	if c.JumpHost != "" {
		if _, _, _, err := parseJump(c.JumpHost, c.User); err != nil {
			bad("jump_host", "%s", err.Error())
		}
	}
	if c.ConnectTimeout < 0 {
		bad("connect_timeout", "must not be negative")
	}
	if c.KeepaliveInterval < 0 {
		bad("keepalive_interval", "must not be negative")
	}
	switch {
	case c.Workdir == "":
		bad("workdir", "required")
	case !path.IsAbs(c.Workdir):
		bad("workdir", "%q must be an absolute path on the remote host", c.Workdir)
	case strings.ContainsAny(c.Workdir, "\x00\n"):
		bad("workdir", "contains a NUL or newline")
	}
	switch c.Mode {
	case "", ModeAuto, ModeSession:
	default:
		bad("mode", "%q is not one of auto, session", c.Mode)
	}
	switch c.Sandbox {
	case "", SandboxAuto, SandboxLandlock, SandboxOff:
	default:
		bad("sandbox", "%q is not one of auto, landlock, off", c.Sandbox)
	}
	if c.DefaultTimeout < 0 {
		errs = append(errs, errors.New("environment.timeout: must not be negative"))
	}
	if c.MaxOutputBytes < 0 {
		errs = append(errs, errors.New("environment.max_output_bytes: must not be negative"))
	}
	if c.KillGrace < 0 {
		errs = append(errs, errors.New("environment.kill_grace: must not be negative"))
	}
	return errors.Join(errs...)
}

// target is the remote address as host:port.
func (c Config) target() string { return net.JoinHostPort(c.Host, strconv.Itoa(c.Port)) }

// parseJump splits "[user@]host[:port]" with the given default user and port 22.
func parseJump(spec, defUser string) (user, host string, port int, err error) {
	user, hostport := defUser, spec
	if u, h, ok := strings.Cut(spec, "@"); ok {
		user, hostport = u, h
	}
	host, port = hostport, 22
	if h, ps, err := net.SplitHostPort(hostport); err == nil {
		host = h
		if port, err = strconv.Atoi(ps); err != nil || port <= 0 || port > 65535 {
			return "", "", 0, fmt.Errorf("%q: bad port", spec)
		}
	}
	if user == "" || host == "" || strings.ContainsAny(host, " \t@/") {
		return "", "", 0, fmt.Errorf("%q is not [user@]host[:port]", spec)
	}
	return user, host, port, nil
}

// Option adjusts construction.
type Option func(*options) error

type options struct {
	logger hclog.Logger
	egress *backend.Egress
	roots  roots
}

// roots are the policy's read and write roots as [policy] names them: relative to the
// remote workspace, or absolute remote paths. Empty means the workspace.
type roots struct{ read, write []string }

// WithRoots gives the helper's kernel sandbox the policy's roots (read and write, as
// [policy] names them: relative to the remote workspace, or absolute remote paths): commands
// may then write only in the write roots. Without it the workspace is the only root.
func WithRoots(read, write []string) Option {
	return func(o *options) error {
		for _, r := range append(append([]string(nil), read...), write...) {
			if r == "" {
				return errors.New("ssh: empty root")
			}
		}
		o.roots = roots{read: read, write: write}
		return nil
	}
}

// WithEgress routes commands through a running egress proxy ([network] mode "allowlist"):
// on every connection the backend asks the remote sshd for a reverse-forwarded port on the
// remote host's 127.0.0.1, has the proxy answer there (eg.Serve; without it each connection
// is relayed to eg.URL on this host), and sets HTTP_PROXY, HTTPS_PROXY, http_proxy,
// https_proxy (NO_PROXY empty) for every command to that port. A refusal names its call: in
// helper mode the helper tells which of its commands holds the connection; in session mode
// each call's commands get a forwarded port of their own (see egress.go). The remote host's own network is not cut: a command that ignores the proxy
// variables reaches what the host reaches (unless the helper's kernel sandbox forbids TCP,
// see [Env.Describe]). Close stops the proxy.
func WithEgress(eg backend.Egress) Option {
	return func(o *options) error {
		if !strings.HasPrefix(eg.URL, "http://") {
			return fmt.Errorf("ssh: egress proxy URL %q is not http://host:port", eg.URL)
		}
		o.egress = &eg
		return nil
	}
}

// WithLogger sets the logger (default: none).
func WithLogger(l hclog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("ssh: nil logger")
		}
		o.logger = l
		return nil
	}
}

// Env is a remote host reached over one kept SSH connection.
type Env struct {
	cfg  Config
	log  hclog.Logger
	dial *dialer
	bin  helperBinary
	// egress is the proxy commands are pointed at (nil unless [network] mode is allowlist).
	egress *backend.Egress
	// roots are the policy's roots the helper's sandbox is built from (see [WithRoots]).
	roots roots

	// sessions bounds concurrent command sessions below sshd's MaxSessions (10 by default),
	// leaving room for the sessions that kill process groups.
	sessions chan struct{}
	// connSem serialises (re)connecting; a channel so that waiters honour their context.
	connSem chan struct{}

	mu        sync.Mutex
	link      *link
	workspace string // real path of cfg.Workdir on the remote host, set by the first probe
	home      string // the remote account's HOME and SHELL
	shell     string
	mode      string
	notes     []string
	sandboxed bool // the helper confines commands with the kernel sandbox
	// owed are notes for the next command's result: why the last connection runs in a
	// slower mode than configured.
	owed    []string
	closed  bool
	closing chan struct{}
}

// maxCommandSessions stays under OpenSSH's default MaxSessions of 10.
const maxCommandSessions = 8

// New checks cfg, connects, verifies the host key, prepares the workspace and, in mode auto,
// installs and starts the resident helper. Errors: a [*HostKeyError] for a key that is not
// known, an authentication error naming the user and host, or an error wrapping
// [backend.ErrUnavailable] when the host cannot be reached.
func New(ctx context.Context, cfg Config, opts ...Option) (*Env, error) {
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
	cfg.KnownHosts = expandHome(cfg.KnownHosts)
	cfg.KeyPath = expandHome(cfg.KeyPath)
	cfg.HelperBinary = expandHome(cfg.HelperBinary)
	d, err := newDialer(cfg)
	if err != nil {
		return nil, err
	}
	e := &Env{
		egress:   o.egress,
		roots:    o.roots,
		cfg:      cfg,
		log:      o.logger.Named("ssh").With("target", cfg.User+"@"+cfg.target()),
		dial:     d,
		sessions: make(chan struct{}, maxCommandSessions),
		connSem:  make(chan struct{}, 1),
		mode:     ModeSession,
		closing:  make(chan struct{}),
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout.D()+time.Minute)
	defer cancel()
	l, err := e.connect(ctx)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.link = l
	e.mu.Unlock()
	return e, nil
}

// Workspace returns the real path of the workdir on the remote host.
func (e *Env) Workspace() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.workspace
}

// Describe reports a remote host: no isolation beyond the remote account's own rights.
func (e *Env) Describe() backend.Description {
	e.mu.Lock()
	defer e.mu.Unlock()
	target := e.cfg.User + "@" + e.cfg.target()
	if e.cfg.JumpHost != "" {
		target += " via " + e.cfg.JumpHost
	}
	where := "commands run on the remote host as " + e.cfg.User + ": no filesystem or network isolation there"
	if e.sandboxed {
		where = "commands run on the remote host as " + e.cfg.User + ", each in the helper's kernel sandbox"
	}
	notes := append([]string{
		where,
		"no variable of the Airlock host reaches remote commands",
	}, e.notes...)
	notes = append(notes, e.cfg.OldKeyNotes()...)
	if e.egress != nil {
		n := "network allowlist: HTTP(S)_PROXY points commands at Airlock's egress proxy through a port reverse-forwarded to the remote host's 127.0.0.1; the remote host's own network is not cut, so a command that ignores the proxy variables reaches what the host reaches"
		if e.sandboxed {
			n = "network allowlist: HTTP(S)_PROXY points commands at Airlock's egress proxy through a port reverse-forwarded to the remote host's 127.0.0.1; the helper's kernel sandbox allows TCP connect only to that port number (any address), so the proxy governs TCP; the remote host's own network is otherwise not Airlock's"
		}
		notes = append(notes, n)
	}
	if e.mode != ModeHelper {
		notes = append(notes, "session mode kills each command's process group; a process that leaves it with setsid can outlive its command (the resident helper, a subreaper, does not have that gap)")
	}
	return backend.Description{
		Kind:      "ssh",
		Mode:      e.mode,
		Workspace: e.workspace,
		Target:    target,
		Capabilities: backend.Capabilities{
			ProcessTreeKill:  true,
			ResidentHelper:   e.mode == ModeHelper,
			KernelSandbox:    e.sandboxed,
			NetworkIsolation: e.sandboxed,
		},
		Limits: backend.Limits{
			DefaultTimeout: e.cfg.DefaultTimeout,
			MaxOutputBytes: e.cfg.MaxOutputBytes,
		},
		Notes: notes,
	}
}

// Close ends the connection; calls in flight end with an error. It is idempotent.
func (e *Env) Close(context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	close(e.closing)
	l := e.link
	e.link = nil
	e.mu.Unlock()
	if l != nil {
		l.kill(nil)
	}
	if e.egress != nil && e.egress.Stop != nil {
		return e.egress.Stop()
	}
	return nil
}

func (e *Env) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// expandHome turns a leading "~/" into the local user's home directory.
func expandHome(p string) string {
	if strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[2:])
		}
	}
	return p
}
