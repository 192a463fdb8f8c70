package docker

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/docker/go-units"

	"github.com/airlock-dev/airlock/backend"
)

// Config is the [environment.docker] section. Start from DefaultConfig: zero values of the
// boolean keys are not defaults.
type Config struct {
	// Host is the daemon address (unix:///…, tcp://…); empty means DOCKER_HOST, then the
	// default socket, as the docker CLI does.
	Host string `toml:"host"`
	// Image is the image commands run in; it must already be on the daemon.
	Image string `toml:"image"`
	// Workdir is the workspace inside the container.
	Workdir string `toml:"workdir"`
	// Volumes are the exact host directories mounted into the container. None may lie
	// inside another that is mounted writable (see [Config.Validate]).
	Volumes []Volume `toml:"volumes"`
	// ReuseContainer keeps one container per configuration fingerprint across sessions.
	ReuseContainer bool `toml:"reuse_container"`
	// WarmPool is how many started containers, helper running, to keep ready for new
	// ephemeral sessions (0..64, default 0: none). It needs ReuseContainer false: a reused
	// container is already shared by every ephemeral session. See docs/docker.md.
	WarmPool int `toml:"warm_pool"`
	// ContainerNamePrefix starts every container's name.
	ContainerNamePrefix string `toml:"container_name_prefix"`
	// Network is the network mode: "none" (default), "bridge" or a user-defined network.
	Network string `toml:"network"`
	// Memory limits the container's memory (and swap): bytes or "512m". It is required: a
	// container always has a memory limit, so 0 is refused rather than read as "none".
	Memory ByteSize `toml:"memory"`
	// CPUs limits CPU time, in CPUs (1.5 = one and a half). Like Memory, 0 is refused.
	CPUs float64 `toml:"cpus"`
	// PidsLimit bounds the number of processes in the container; 0 means the default.
	PidsLimit int64 `toml:"pids_limit"`
	// User runs commands as uid:gid (or a name the image knows). "auto" (the default) is the
	// owner of the mounted workspace, as devcontainers do, or 65534:65534; see [UserAuto].
	User string `toml:"user"`
	// ReadOnlyRootfs mounts the image's root filesystem read-only. The helper then lives in
	// a small root-only tmpfs at /.airlock, whose pages count against Memory.
	ReadOnlyRootfs bool `toml:"read_only_rootfs"`
	// Tmpfs are extra tmpfs mounts; /tmp always is one.
	Tmpfs []Tmpfs `toml:"tmpfs"`
	// TmpSize limits the /tmp tmpfs (its pages also count against Memory). Like Memory it
	// is required: 0 is refused rather than read as "no limit".
	TmpSize ByteSize `toml:"tmp_size"`
	// WorkspaceMinFree is the free space a file-tool write must leave on the filesystem of
	// the path it writes: the resident helper checks it (fstatfs on the directory it holds
	// open) before it writes. It guards the host's disk against write_file and patch only;
	// a bind mount has no quota, so a shell command can still fill it (see docs/backends.md).
	WorkspaceMinFree ByteSize `toml:"workspace_min_free"`
	// CapAdd lists capabilities given back after all are dropped.
	CapAdd []string `toml:"cap_add"`
	// Runtime is the OCI runtime (e.g. "runsc"); empty means the daemon's default.
	Runtime string `toml:"runtime"`
	// IdleTTL is how long a reused container may stay unused before gc removes it.
	IdleTTL backend.Duration `toml:"idle_ttl"`
	// Helper is "auto" (use the resident helper when it can run) or "off" (one exec per
	// command). A file may give it under its former name, agent (see the record's Renamed).
	Helper string `toml:"helper"`
	// HelperBinary is a static linux airlock binary to copy in; empty means the running
	// executable. A file may give it under its former name, agent_binary.
	HelperBinary string `toml:"helper_binary"`
	// Env holds extra variables set in the container.
	Env map[string]string `toml:"env"`
	// OldKeys holds the notes on keys the file gave under a former name, for Describe.
	backend.OldKeys

	// The fields below come from the general [environment] section; the caller fills them.

	// Session names the runtime session the container belongs to; empty for one shared by
	// every session of its configuration. It is part of the fingerprint, so that each named
	// session has a container of its own, found again by a later process of that session.
	Session string `toml:"-"`
	// PoolMember makes the container a warm-pool member: named prefix + "pool-" + its ID
	// until a session claims it (see [Env.Claim]).
	PoolMember bool `toml:"-"`

	// DefaultTimeout applies when a request sets none.
	DefaultTimeout time.Duration `toml:"-"`
	// MaxOutputBytes caps each stream when a request sets none.
	MaxOutputBytes int64 `toml:"-"`
	// EnvPassthrough lists the host variables (names or globs) that reach commands (by
	// default LANG, LC_* and TERM among them, so that tools format output as on the host).
	// PATH, HOME and the other variables that describe the host never do, nor does anything
	// that looks like a secret: the container has its own.
	EnvPassthrough []string `toml:"-"`
	// KillGrace is the time between TERM and KILL.
	KillGrace time.Duration `toml:"-"`
}

// Volume is one host directory mounted into the container.
type Volume struct {
	Host      string `toml:"host"`
	Container string `toml:"container"`
	ReadOnly  bool   `toml:"read_only"`
}

// Tmpfs is one extra tmpfs mount.
type Tmpfs struct {
	Path string   `toml:"path"`
	Size ByteSize `toml:"size"`
}

// ByteSize is a size in bytes; in TOML a number of bytes or a string such as "512m".
type ByteSize int64

// UnmarshalTOML implements toml.Unmarshaler.
func (b *ByteSize) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return errors.New("size: must not be negative")
		}
		*b = ByteSize(x)
	case string:
		n, err := units.RAMInBytes(x)
		if err != nil {
			return fmt.Errorf("size %q: want bytes or a size such as \"512m\": %w", x, err)
		}
		if n < 0 {
			return errors.New("size: must not be negative")
		}
		*b = ByteSize(n)
	default:
		return fmt.Errorf("size: want bytes or a string such as \"512m\", got %T", v)
	}
	return nil
}

// DefaultConfig returns the hardened defaults.
func DefaultConfig() Config {
	return Config{
		Workdir:             "/workspace",
		ReuseContainer:      true,
		ContainerNamePrefix: "airlock_",
		Network:             "none",
		Memory:              1 << 30,
		CPUs:                1,
		PidsLimit:           256,
		TmpSize:             256 << 20,
		WorkspaceMinFree:    64 << 20,
		User:                UserAuto,
		IdleTTL:             backend.Duration(30 * time.Minute),
		Helper:              HelperAuto,
		DefaultTimeout:      backend.DefaultTimeout,
		MaxOutputBytes:      backend.DefaultMaxOutputBytes,
		EnvPassthrough:      backend.DefaultPassthrough,
		KillGrace:           backend.DefaultKillGrace,
	}
}

// Helper settings.
const (
	HelperAuto = "auto"
	HelperOff  = "off"
)

// withDefaults fills the zero fields that have a non-zero default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Workdir == "" {
		c.Workdir = d.Workdir
	}
	if c.ContainerNamePrefix == "" {
		c.ContainerNamePrefix = d.ContainerNamePrefix
	}
	if c.Network == "" {
		c.Network = d.Network
	}
	if c.PidsLimit == 0 {
		c.PidsLimit = d.PidsLimit
	}
	if c.User == "" {
		c.User = d.User
	}
	if c.IdleTTL == 0 {
		c.IdleTTL = d.IdleTTL
	}
	if c.Helper == "" {
		c.Helper = d.Helper
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
	if c.KillGrace == 0 {
		c.KillGrace = d.KillGrace
	}
	return c
}

const key = "environment.docker."

var (
	namePrefixRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)
	capRE        = regexp.MustCompile(`^(CAP_)?[A-Z][A-Z0-9_]*$`)
	userRE       = regexp.MustCompile(`^[a-zA-Z0-9_.-]+(:[a-zA-Z0-9_.-]+)?$`)
)

// Validate reports every key that cannot work, each error naming the key, e.g.
// "environment.docker.volumes[1].host: refused: /etc is a system directory". Host paths of
// volumes are checked after resolving their symlinks; see [CheckHostPath]. A volume whose
// host directory lies inside another volume's that is mounted writable is refused too: a
// command could replace the inner directory with a symlink, which Docker would follow on the
// host when the container next starts.
func (c Config) Validate() error {
	var errs []error
	bad := func(k, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s%s: %s", key, k, fmt.Sprintf(format, args...)))
	}
	if c.Image == "" {
		bad("image", "required: the image commands run in")
	}
	if !path.IsAbs(c.Workdir) || path.Clean(c.Workdir) == "/" {
		bad("workdir", "must be an absolute path below /, got %q", c.Workdir)
	}
	c.validateMounts(bad)
	c.validateResources(bad)
	c.validateProcess(bad)
	if err := c.validatePool(); err != nil {
		errs = append(errs, err)
	}
	for name := range c.Env {
		switch {
		case !backend.ValidName(name):
			bad("env", "%q is not a valid variable name", name)
		case backend.IsSecretName(name):
			bad("env", "%q looks like a secret; secrets never reach commands", name)
		}
	}
	if c.DefaultTimeout < 0 || c.KillGrace < 0 || c.MaxOutputBytes < 0 {
		errs = append(errs, errors.New("environment: timeout, kill_grace and max_output_bytes must not be negative"))
	}
	return errors.Join(errs...)
}

// complaint records that key k (below environment.docker) cannot work, and why.
type complaint func(k, format string, args ...any)

// validateMounts checks the volumes and tmpfs mounts: each target a path of its own that
// mounts over nothing the container needs, each host directory allowed (CheckHostPath) and
// not inside another volume's writable one.
func (c Config) validateMounts(bad complaint) {
	targets := map[string]string{"/tmp": "the /tmp tmpfs", markDir: "the resident helper's directory", egressMount: "the egress proxy's sockets"}
	checkTarget := func(k, p string) {
		switch {
		case !path.IsAbs(p):
			bad(k, "must be an absolute path in the container, got %q", p)
			return
		case path.Clean(p) == "/":
			bad(k, "refused: / cannot be mounted over")
			return
		}
		for _, sys := range []string{"/proc", "/sys", "/dev"} {
			if backend.Within(sys, p) {
				bad(k, "refused: %s is a kernel filesystem in the container", sys)
				return
			}
		}
		if prev, dup := targets[path.Clean(p)]; dup {
			bad(k, "%s is already used by %s", path.Clean(p), prev)
			return
		}
		targets[path.Clean(p)] = k
	}
	hosts := make([]hostDir, len(c.Volumes))
	for i, v := range c.Volumes {
		k := fmt.Sprintf("volumes[%d]", i)
		hosts[i] = hostDir{clean: filepath.Clean(v.Host), writable: !v.ReadOnly}
		if real, err := CheckHostPath(v.Host, c.Host); err != nil {
			bad(k+".host", "%s", err.Error())
		} else {
			hosts[i].real = real
		}
		checkTarget(k+".container", v.Container)
	}
	for i, j := range nestedVolumes(hosts) {
		if j < 0 {
			continue
		}
		bad(fmt.Sprintf("volumes[%d].host", i), "refused: %s lies inside volumes[%d].host (%s), which is mounted writable: a command could replace it with a symlink that Docker follows on the host when the container next starts; drop volumes[%d] (its files are visible through volumes[%d] already) or make volumes[%d] read-only",
			c.Volumes[i].Host, j, c.Volumes[j].Host, i, j, j)
	}
	for i, t := range c.Tmpfs {
		checkTarget(fmt.Sprintf("tmpfs[%d].path", i), t.Path)
	}
}

// validateResources checks the container's name and network and its limits, each of which
// a container always has: zero is refused rather than read as "none".
func (c Config) validateResources(bad complaint) {
	switch {
	case c.TmpSize == 0:
		bad("tmp_size", "0 would remove the /tmp size limit, and /tmp always has one; leave the key out for the default (256m) or give a size such as \"1g\"")
	case c.TmpSize < 1<<20:
		bad("tmp_size", "%d bytes is below the smallest useful /tmp of 1 MiB", c.TmpSize)
	}
	if !namePrefixRE.MatchString(c.ContainerNamePrefix) {
		bad("container_name_prefix", "%q is not a valid container name start ([a-zA-Z0-9][a-zA-Z0-9_.-]*)", c.ContainerNamePrefix)
	}
	switch n := c.Network; {
	case n == "host":
		bad("network", "refused: host networking gives commands the host's network; use \"none\" or a bridge network")
	case strings.HasPrefix(n, "container:"):
		bad("network", "refused: sharing another container's network namespace")
	}
	switch {
	case c.Memory == 0:
		bad("memory", "0 would remove the memory limit, and a container always has one; leave the key out for the default (1g) or give a size such as \"2g\"")
	case c.Memory < 6<<20:
		bad("memory", "%d bytes is below Docker's minimum of 6 MiB", c.Memory)
	}
	switch {
	case c.CPUs == 0:
		bad("cpus", "0 would remove the CPU limit, and a container always has one; leave the key out for the default (1) or give a number of CPUs such as 2")
	case !(c.CPUs >= 0.01) || math.IsInf(c.CPUs, 1):
		bad("cpus", "must be a number of CPUs of at least 0.01, got %g", c.CPUs)
	}
	if c.PidsLimit < 0 {
		bad("pids_limit", "must not be negative")
	}
}

// validateProcess checks who commands run as and with what: the user, added capabilities,
// the helper's mode and the idle container's lifetime.
func (c Config) validateProcess(bad complaint) {
	if !userRE.MatchString(c.User) {
		bad("user", "want uid:gid or a user name, got %q", c.User)
	}
	for i, cp := range c.CapAdd {
		if !capRE.MatchString(strings.ToUpper(cp)) || strings.EqualFold(cp, "ALL") {
			bad(fmt.Sprintf("cap_add[%d]", i), "%q is not a single capability name", cp)
		}
	}
	if c.Helper != HelperAuto && c.Helper != HelperOff {
		bad("helper", "want \"auto\" or \"off\", got %q", c.Helper)
	}
	if c.IdleTTL < 0 {
		bad("idle_ttl", "must not be negative")
	}
}

// validatePool checks warm_pool: the record's Validate, at config load, as well as New.
func (c *Config) validatePool() error {
	switch {
	case c.WarmPool < 0 || c.WarmPool > backend.MaxWarmPool:
		return fmt.Errorf("%swarm_pool: want 0 to %d ready containers, got %d", key, backend.MaxWarmPool, c.WarmPool)
	case c.WarmPool > 0 && c.ReuseContainer:
		return fmt.Errorf("%swarm_pool = %d needs %sreuse_container = false: with a reused container every session without a name already shares one container, and a pool keeps containers of their own for sessions to take", key, c.WarmPool, key)
	}
	return nil
}

// hostDir is one volume's host directory as configured and as resolved ("" if it cannot be).
type hostDir struct {
	clean, real string
	writable    bool
}

// nestedVolumes returns, for each volume, the index of a writable volume whose host
// directory contains its own, or -1. Lexical paths count as well as resolved ones, so that
// a host path reached through a symlink inside a writable volume is caught too. The same
// directory mounted twice is not nested: a mount's own root cannot be replaced from inside.
func nestedVolumes(vs []hostDir) []int {
	out := make([]int, len(vs))
	for i, inner := range vs {
		out[i] = -1
		for j, outer := range vs {
			if i == j || !outer.writable {
				continue
			}
			if strictlyWithin(outer.real, inner.real) || strictlyWithin(outer.real, inner.clean) ||
				strictlyWithin(outer.clean, inner.clean) {
				out[i] = j
				break
			}
		}
	}
	return out
}

// strictlyWithin reports whether p lies below dir (not at it); empty paths are never within.
func strictlyWithin(dir, p string) bool {
	return dir != "" && p != "" && filepath.Clean(dir) != filepath.Clean(p) && backend.Within(dir, p)
}

// runtimePaths are what the Docker backend refuses to mount beyond [backend.SystemDirs]: the
// state and runtime directories of container runtimes.
var runtimePaths = backend.PathRules{
	{Dir: "/run", Base: "docker*", Subtree: true, Why: "is the Docker daemon's runtime directory"},
	{Dir: "/var/run", Base: "docker*", Subtree: true, Why: "is the Docker daemon's runtime directory"},
	{Dir: "/run", Base: "containerd", Subtree: true, Why: "is containerd's runtime directory"},
	{Dir: "/var/run", Base: "containerd", Subtree: true, Why: "is containerd's runtime directory"},
	{Dir: "/var/lib", Base: "docker", Subtree: true, Why: "is the Docker daemon's state"},
	{Dir: "/var/lib", Base: "containerd", Subtree: true, Why: "is containerd's state"},
}

var socketNames = []string{"docker.sock", "containerd.sock", "dockershim.sock", "podman.sock", "crio.sock"}

// CheckHostPath decides whether a host path may be mounted and returns it with its symlinks
// resolved. It refuses /, system and kernel directories, a home directory's root, Docker and
// containerd sockets and state, the socket of daemonHost (the configured daemon address) and
// of DOCKER_HOST, any socket file, and any directory that contains one of those. A directory
// that holds a unix socket of any name at its top level is refused as well: a socket in a
// mounted directory is a door to whatever service listens on it, a container runtime's
// most of all, and sockets are recognised by type, not by name. Sockets deeper down are not
// looked for. The decision is made on the resolved path, so a symlink to /etc is refused as
// /etc.
func CheckHostPath(p, daemonHost string) (string, error) {
	if p == "" || !filepath.IsAbs(p) {
		return "", fmt.Errorf("must be an absolute host path, got %q", p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("cannot resolve: %w", err)
	}
	shown := real
	if real != filepath.Clean(p) {
		shown = fmt.Sprintf("%s (resolved from %s)", real, p)
	}
	if why := refusal(real, daemonSockets(daemonHost)); why != "" {
		return "", fmt.Errorf("refused: %s %s", shown, why)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("cannot stat: %w", err)
	}
	if fi.Mode()&os.ModeSocket != 0 {
		return "", fmt.Errorf("refused: %s is a socket", shown)
	}
	if fi.IsDir() {
		entries, err := os.ReadDir(real)
		if err != nil {
			return "", fmt.Errorf("cannot list %s to look for sockets: %w", shown, err)
		}
		for _, ent := range entries {
			if ent.Type()&os.ModeSocket != 0 {
				return "", fmt.Errorf("refused: %s contains the unix socket %s, which would let commands reach the service behind it; mount a directory without sockets",
					shown, ent.Name())
			}
		}
	}
	return real, nil
}

// refusal says why a resolved, cleaned path may not be mounted, or "" if it may. sockets are
// the resolved daemon sockets in use.
func refusal(p string, sockets []string) string {
	p = filepath.Clean(p)
	if p == "/" {
		return "is the host's root"
	}
	if why := runtimePaths.Refusal(p); why != "" {
		return why
	}
	if why := backend.SystemDir(p); why != "" {
		return why
	}
	base := path.Base(p)
	for _, s := range socketNames {
		if base == s {
			return "is a container runtime socket"
		}
	}
	for _, sock := range sockets {
		if !backend.Within(p, sock) {
			continue
		}
		if p == sock {
			return "is the Docker daemon's socket"
		}
		return "contains the Docker daemon's socket " + sock
	}
	return ""
}

// daemonSockets are the unix sockets of the configured daemon address and of DOCKER_HOST,
// resolved, for those that are unix sockets.
func daemonSockets(host string) []string {
	var out []string
	for _, h := range []string{host, os.Getenv("DOCKER_HOST")} {
		sock, ok := strings.CutPrefix(h, "unix://")
		if !ok || sock == "" {
			continue
		}
		if real, err := filepath.EvalSymlinks(sock); err == nil {
			sock = real
		}
		out = append(out, filepath.Clean(sock))
	}
	return out
}
