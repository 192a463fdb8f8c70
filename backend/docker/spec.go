package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/backend/helper"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// containerPath is the default PATH inside the container; the host's PATH never enters.
const containerPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// tmpOptions mount /tmp (and extra tmpfs mounts) executable: commands may build and run
// programs there.
var tmpOptions = []string{"rw", "exec", "nosuid", "nodev", "mode=1777"}

// helperTmpfsOptions mount the helper's directory when the root filesystem is read-only: a
// tmpfs of its own, owned by root and writable by root only, so that no command (running as
// another user) can put anything there, whatever ran in the container before.
var helperTmpfsOptions = []string{"rw", "exec", "nosuid", "nodev", "mode=0755"}

// helperTmpfsSize is the size of the helper's tmpfs: room for the binary while a second copy
// is written next to it, and at least 64 MiB. Its pages count against the memory limit only
// as far as they are used.
func helperTmpfsSize(binary int64) int64 {
	const mib = 1 << 20
	return max(64*mib, (2*binary+mib-1)/mib*mib)
}

// helperCaps are what the helper needs to start commands as their user; commands, which run
// as that user with no-new-privileges, never hold them.
var helperCaps = []string{"CAP_SETGID", "CAP_SETUID"}

// mainUser runs the container's main process (the init and its sleep): root, so that no
// command can end it, and with it the container and the helper.
const mainUser = "0:0"

// spec is what the container is, in OCI runtime-spec terms. It is built once from the
// configuration, hashed into the fingerprint, and translated once to Engine API types.
type spec struct {
	ImageID        string   `json:"image_id"`
	Session        string   `json:"session,omitempty"`
	Workdir        string   `json:"workdir"`
	User           string   `json:"user"`
	Env            []string `json:"env"`
	Network        string   `json:"network"`
	Runtime        string   `json:"runtime,omitempty"`
	ReadOnlyRootfs bool     `json:"read_only_rootfs"`
	Helper         string   `json:"helper"` // "off", "unusable" or the helper's "sha256:…"
	// HelperRunAs, when set, is the uid:gid the helper, started as root, runs commands as
	// while it keeps root as its real user (see [helper.RunAs]); the container then adds
	// CAP_SETUID and CAP_SETGID, which only the helper holds.
	HelperRunAs     string `json:"helper_run_as,omitempty"`
	NoNewPrivileges bool   `json:"no_new_privileges"`
	// GVisor is set when the runtime is gVisor, whose variant of the seccomp profile the
	// container gets (see seccomp.go).
	GVisor bool `json:"gvisor,omitempty"`
	// Seccomp is the SHA-256 of the container's seccomp profile.
	Seccomp      string                  `json:"seccomp"`
	Init         bool                    `json:"init"`
	CgroupNS     string                  `json:"cgroupns"` // "private": the container sees only its own cgroup
	Mounts       []specs.Mount           `json:"mounts"`
	Capabilities specs.LinuxCapabilities `json:"capabilities"`
	Resources    specs.LinuxResources    `json:"resources"`
}

// buildSpec turns a validated configuration into a spec. Host paths are resolved again here,
// so the fingerprint names the real directories. helper is the helper binary that will be
// installed (ignored when the helper is off): its digest is part of the fingerprint, so a
// container prepared for one helper, or for none, is never reused for another. gVisor says
// whether the runtime in force is gVisor.
func buildSpec(cfg Config, imageID string, bin binaryInfo, gVisor bool) (spec, error) {
	s := spec{
		ImageID:         imageID,
		Session:         cfg.Session,
		Workdir:         cfg.Workdir,
		User:            cfg.User,
		Network:         cfg.Network,
		Runtime:         cfg.Runtime,
		ReadOnlyRootfs:  cfg.ReadOnlyRootfs,
		NoNewPrivileges: true,
		Init:            true,
		GVisor:          gVisor,
		Seccomp:         seccompHash(gVisor),
		CgroupNS:        string(container.CgroupnsModePrivate),
	}
	switch {
	case cfg.Helper == HelperOff:
		s.Helper = HelperOff
	case bin.problem != "" || bin.sha == "":
		s.Helper = "unusable"
	default:
		s.Helper = "sha256:" + bin.sha
		if _, err := helper.ParseRunAs(cfg.User); err == nil {
			s.HelperRunAs = cfg.User
		}
	}
	env := map[string]string{"PATH": containerPath, "HOME": "/tmp"}
	for k, v := range cfg.Env {
		env[k] = v
	}
	for k, v := range env {
		s.Env = append(s.Env, k+"="+v)
	}
	sort.Strings(s.Env)

	mounts, err := specMounts(cfg, s.ReadOnlyRootfs && strings.HasPrefix(s.Helper, "sha256:"), bin.size)
	if err != nil {
		return spec{}, err
	}
	s.Mounts = mounts
	s.Capabilities = specCapabilities(cfg.CapAdd, s.HelperRunAs != "")
	specResources(cfg, &s)
	return s, nil
}

// specMounts are the container's mounts: the volumes (their host paths checked again), the
// /tmp tmpfs, the configured tmpfs mounts, and the resident helper's own tmpfs where the root
// filesystem is read-only (helperTmpfs, sized for a binary of helperSize bytes).
func specMounts(cfg Config, helperTmpfs bool, helperSize int64) ([]specs.Mount, error) {
	var ms []specs.Mount
	for _, v := range cfg.Volumes {
		real, err := CheckHostPath(v.Host, cfg.Host)
		if err != nil {
			return nil, err
		}
		mode := "rw"
		if v.ReadOnly {
			mode = "ro"
		}
		ms = append(ms, specs.Mount{Destination: v.Container, Type: "bind", Source: real,
			Options: []string{"rbind", "rprivate", mode}})
	}
	tmp := append(append([]string(nil), tmpOptions...), "size="+strconv.FormatInt(int64(cfg.TmpSize), 10))
	ms = append(ms, specs.Mount{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: tmp})
	for _, t := range cfg.Tmpfs {
		opts := append([]string(nil), tmpOptions...)
		if t.Size > 0 {
			opts = append(opts, "size="+strconv.FormatInt(int64(t.Size), 10))
		}
		ms = append(ms, specs.Mount{Destination: t.Path, Type: "tmpfs", Source: "tmpfs", Options: opts})
	}
	if helperTmpfs {
		opts := append(append([]string(nil), helperTmpfsOptions...), "size="+strconv.FormatInt(helperTmpfsSize(helperSize), 10))
		ms = append(ms, specs.Mount{Destination: markDir, Type: "tmpfs", Source: "tmpfs", Options: opts})
	}
	return ms, nil
}

// specCapabilities are the capabilities of the container's processes: those cap_add names
// (with or without CAP_), and the helper's own when it runs commands as another user.
func specCapabilities(add []string, helperRunsAs bool) specs.LinuxCapabilities {
	caps := make([]string, 0, len(add))
	for _, c := range add {
		c = strings.ToUpper(c)
		if !strings.HasPrefix(c, "CAP_") {
			c = "CAP_" + c
		}
		caps = append(caps, c)
	}
	if helperRunsAs {
		caps = append(caps, helperCaps...)
	}
	sort.Strings(caps)
	caps = slices.Compact(caps)
	return specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps}
}

// specResources sets s's memory, CPU and process limits from cfg.
func specResources(cfg Config, s *spec) {
	if cfg.Memory > 0 {
		m := int64(cfg.Memory)
		s.Resources.Memory = &specs.LinuxMemory{Limit: &m, Swap: &m}
	}
	if cfg.CPUs > 0 {
		period := uint64(100000)
		quota := int64(cfg.CPUs * float64(period))
		s.Resources.CPU = &specs.LinuxCPU{Quota: &quota, Period: &period}
	}
	if cfg.PidsLimit > 0 {
		n := cfg.PidsLimit
		s.Resources.Pids = &specs.LinuxPids{Limit: &n}
	}
}

// errVolumeChanged marks a volume whose host directory may no longer be mounted.
var errVolumeChanged = errors.New("volume host path changed")

// checkSources checks, just before a container with this spec starts, that every host
// directory may still be mounted and is still the directory the spec was built with: Docker
// resolves a bind mount's source when the container starts, so a source (or a directory
// above it) replaced with a symlink since would mount whatever the symlink names.
func (s spec) checkSources(daemonHost string) error {
	var errs []error
	for _, m := range s.Mounts {
		if m.Type != "bind" {
			continue
		}
		if m.Destination == egressMount {
			// Airlock's own socket directory, which holds sockets by design.
			if err := checkEgressDir(m.Source); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		real, err := CheckHostPath(m.Source, daemonHost)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("docker: refusing to start the container (%w): volume %s (mounted at %s) can no longer be mounted: %w",
				errVolumeChanged, m.Source, m.Destination, err))
		case real != m.Source:
			errs = append(errs, fmt.Errorf("docker: refusing to start the container (%w): volume %s (mounted at %s) now resolves to %s: it, or a directory above it, was replaced with a symlink since the session started; restore %[2]s, or start a new session to mount what it names now",
				errVolumeChanged, m.Source, m.Destination, real))
		}
	}
	return errors.Join(errs...)
}

// fingerprint is the SHA-256 of everything that makes two containers interchangeable.
func (s spec) fingerprint() string {
	b, err := json.Marshal(s)
	if err != nil {
		panic("docker: marshal spec: " + err.Error()) // plain data, cannot fail
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// mainCommand is the container's main process: a sleep that ends promptly on TERM, under the
// init process that reaps orphans.
var mainCommand = []string{"/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done"}

// engine translates the spec to the Engine API's types.
func (s spec) engine(labels map[string]string) (*container.Config, *container.HostConfig) {
	cc := &container.Config{
		Image:      s.ImageID,
		Cmd:        mainCommand,
		Env:        s.Env,
		User:       mainUser,
		WorkingDir: s.Workdir,
		Labels:     labels,
	}
	useInit := s.Init
	hc := &container.HostConfig{
		NetworkMode:    container.NetworkMode(s.Network),
		CapDrop:        []string{"ALL"},
		CapAdd:         s.Capabilities.Bounding,
		SecurityOpt:    []string{"seccomp=" + seccompJSON(s.GVisor)},
		ReadonlyRootfs: s.ReadOnlyRootfs,
		Init:           &useInit,
		Runtime:        s.Runtime,
		Tmpfs:          map[string]string{},
		LogConfig:      container.LogConfig{Type: "none"},
		RestartPolicy:  container.RestartPolicy{Name: container.RestartPolicyDisabled},
		CgroupnsMode:   container.CgroupnsMode(s.CgroupNS),
	}
	if s.NoNewPrivileges {
		hc.SecurityOpt = append(hc.SecurityOpt, "no-new-privileges:true")
	}
	for _, m := range s.Mounts {
		switch m.Type {
		case "bind":
			ro := false
			for _, o := range m.Options {
				ro = ro || o == "ro"
			}
			hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: m.Destination,
				ReadOnly: ro, BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
		case "tmpfs":
			hc.Tmpfs[m.Destination] = strings.Join(m.Options, ",")
		}
	}
	if r := s.Resources.Memory; r != nil && r.Limit != nil {
		hc.Memory = *r.Limit
		hc.MemorySwap = *r.Swap
	}
	if r := s.Resources.CPU; r != nil && r.Quota != nil {
		hc.NanoCPUs = *r.Quota * 1e9 / int64(*r.Period)
	}
	if r := s.Resources.Pids; r != nil && r.Limit != nil {
		n := *r.Limit
		hc.PidsLimit = &n
	}
	return cc, hc
}

// hasWritableBind reports whether some host directory is writable from inside.
func (s spec) hasWritableBind() bool {
	for _, m := range s.Mounts {
		if m.Type != "bind" {
			continue
		}
		rw := true
		for _, o := range m.Options {
			rw = rw && o != "ro"
		}
		if rw {
			return true
		}
	}
	return false
}
