package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// containerPath is the default PATH inside the container; the host's PATH never enters.
const containerPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// tmpOptions mount /tmp (and extra tmpfs mounts) executable, so that the helper may live
// there when the root filesystem is read-only.
var tmpOptions = []string{"rw", "exec", "nosuid", "nodev", "mode=1777"}

// spec is what the container is, in OCI runtime-spec terms. It is built once from the
// configuration, hashed into the fingerprint, and translated once to Engine API types.
type spec struct {
	ImageID         string                  `json:"image_id"`
	Workdir         string                  `json:"workdir"`
	User            string                  `json:"user"`
	Env             []string                `json:"env"`
	Network         string                  `json:"network"`
	Runtime         string                  `json:"runtime,omitempty"`
	ReadOnlyRootfs  bool                    `json:"read_only_rootfs"`
	NoNewPrivileges bool                    `json:"no_new_privileges"`
	Init            bool                    `json:"init"`
	Mounts          []specs.Mount           `json:"mounts"`
	Capabilities    specs.LinuxCapabilities `json:"capabilities"`
	Resources       specs.LinuxResources    `json:"resources"`
}

// buildSpec turns a validated configuration into a spec. Host paths are resolved again here,
// so the fingerprint names the real directories.
func buildSpec(cfg Config, imageID string) (spec, error) {
	s := spec{
		ImageID:         imageID,
		Workdir:         cfg.Workdir,
		User:            cfg.User,
		Network:         cfg.Network,
		Runtime:         cfg.Runtime,
		ReadOnlyRootfs:  cfg.ReadOnlyRootfs,
		NoNewPrivileges: true,
		Init:            true,
	}
	env := map[string]string{"PATH": containerPath, "HOME": "/tmp"}
	for k, v := range cfg.Env {
		env[k] = v
	}
	for k, v := range env {
		s.Env = append(s.Env, k+"="+v)
	}
	sort.Strings(s.Env)

	for _, v := range cfg.Volumes {
		real, err := CheckHostPath(v.Host)
		if err != nil {
			return spec{}, err
		}
		mode := "rw"
		if v.ReadOnly {
			mode = "ro"
		}
		s.Mounts = append(s.Mounts, specs.Mount{Destination: v.Container, Type: "bind", Source: real,
			Options: []string{"rbind", "rprivate", mode}})
	}
	s.Mounts = append(s.Mounts, specs.Mount{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: tmpOptions})
	for _, t := range cfg.Tmpfs {
		opts := append([]string(nil), tmpOptions...)
		if t.Size > 0 {
			opts = append(opts, "size="+strconv.FormatInt(int64(t.Size), 10))
		}
		s.Mounts = append(s.Mounts, specs.Mount{Destination: t.Path, Type: "tmpfs", Source: "tmpfs", Options: opts})
	}

	caps := make([]string, 0, len(cfg.CapAdd))
	for _, c := range cfg.CapAdd {
		c = strings.ToUpper(c)
		if !strings.HasPrefix(c, "CAP_") {
			c = "CAP_" + c
		}
		caps = append(caps, c)
	}
	sort.Strings(caps)
	s.Capabilities = specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps}

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
	return s, nil
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
		User:       s.User,
		WorkingDir: s.Workdir,
		Labels:     labels,
	}
	useInit := s.Init
	hc := &container.HostConfig{
		NetworkMode:    container.NetworkMode(s.Network),
		CapDrop:        []string{"ALL"},
		CapAdd:         s.Capabilities.Bounding,
		SecurityOpt:    []string{"no-new-privileges:true"},
		ReadonlyRootfs: s.ReadOnlyRootfs,
		Init:           &useInit,
		Runtime:        s.Runtime,
		Tmpfs:          map[string]string{},
		LogConfig:      container.LogConfig{Type: "none"},
		RestartPolicy:  container.RestartPolicy{Name: container.RestartPolicyDisabled},
	}
	if !s.NoNewPrivileges {
		hc.SecurityOpt = nil
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
