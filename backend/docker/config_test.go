package docker

import (
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/backend"
)

func TestCheckHostPathRefuses(t *testing.T) {
	t.Setenv("DOCKER_HOST", "")
	tmp := t.TempDir()
	etcLink := filepath.Join(tmp, "innocent")
	if err := os.Symlink("/etc", etcLink); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(tmp, "project")
	if err := os.Mkdir(ok, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
	}{
		{"root", "/", "host's root"},
		{"etc", "/etc", "/etc is a system directory"},
		{"below etc", "/etc/ssl", "system directory"},
		{"symlink to etc", etcLink, "/etc (resolved from " + etcLink + ") is a system directory"},
		{"proc", "/proc", "kernel filesystem"},
		{"sys", "/sys", "kernel filesystem"},
		{"dev", "/dev", "devices"},
		{"boot", "/boot", "system directory"},
		{"root home", "/root", "home directory"},
		{"var holds docker state", "/var", "/var contains /var/"},
		{"run holds sockets", "/run", "contains /run/docker*"},
		{"relative", "relative/path", "absolute"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Lstat(tc.path); err != nil && filepath.IsAbs(tc.path) {
				t.Skipf("%s does not exist here", tc.path)
			}
			_, err := CheckHostPath(tc.path, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckHostPath(%q) = %v, want an error containing %q", tc.path, err, tc.want)
			}
		})
	}
	if real, err := CheckHostPath(ok, ""); err != nil || real != ok {
		t.Errorf("a plain project directory was refused: %q %v", real, err)
	}
}

// TestRefusal covers paths that need not exist on this machine.
func TestRefusal(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix:///run/airlock-ci/docker.sock")
	t.Setenv("HOME", "/srv/users/ann")
	for path, refused := range map[string]bool{
		"/home":                           true,
		"/home/bob":                       true,
		"/home/bob/project":               false,
		"/root/project":                   false,
		"/var/run/docker.sock":            true,
		"/var/run/docker":                 true,
		"/run/docker.sock":                true,
		"/run/containerd":                 true,
		"/run/containerd/containerd.sock": true,
		"/var/lib/docker/volumes/x":       true,
		"/var/lib/containerd":             true,
		"/srv/data/docker.sock":           true,
		"/srv/data/containerd.sock":       true,
		"/run/airlock-ci":                 true, // holds DOCKER_HOST's socket
		"/srv/users/ann":                  true, // $HOME
		"/srv/users":                      true,
		"/srv/users/ann/code":             false,
		"/srv/data":                       false,
		"/tmp/work":                       false,
		"/opt/app":                        false,
		"/var/lib/app":                    false,
		"/etc2":                           false,
	} {
		if why := refusal(path, daemonSockets("")); (why != "") != refused {
			t.Errorf("refusal(%q) = %q, want refused=%v", path, why, refused)
		}
	}
}

func FuzzRefusal(f *testing.F) {
	for _, s := range []string{"/", "/etc", "/home/x/y", "/var/run/docker.sock", "/a/../etc", "//etc//ssl"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if !filepath.IsAbs(p) {
			return
		}
		why := refusal(p, nil)
		clean := filepath.Clean(p)
		for _, sys := range []string{"/etc", "/proc", "/sys", "/dev", "/boot"} {
			if (clean == sys || strings.HasPrefix(clean, sys+"/")) && why == "" {
				t.Fatalf("%q (%s) not refused", p, clean)
			}
		}
		if clean == "/" && why == "" {
			t.Fatalf("/ not refused")
		}
	})
}

func TestValidateNamesKeys(t *testing.T) {
	t.Setenv("DOCKER_HOST", "")
	ws := t.TempDir()
	cfg := DefaultConfig()
	cfg.Image = "img"
	cfg.Volumes = []Volume{{Host: ws, Container: "/workspace"}, {Host: "/etc", Container: "/x"}, {Host: ws, Container: "/workspace"}}
	cfg.Network = "host"
	cfg.Helper = "sometimes"
	cfg.CapAdd = []string{"ALL"}
	cfg.Env = map[string]string{"GITHUB_TOKEN": "x"}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"environment.docker.volumes[1].host: refused: /etc is a system directory",
		"environment.docker.volumes[2].container: /workspace is already used by volumes[0].container",
		"environment.docker.network: refused",
		"environment.docker.helper:",
		"environment.docker.cap_add[0]:",
		"environment.docker.env: \"GITHUB_TOKEN\" looks like a secret",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	good := DefaultConfig()
	good.Image = "img"
	good.Volumes = []Volume{{Host: ws, Container: "/workspace"}}
	if err := good.Validate(); err != nil {
		t.Errorf("valid config refused: %v", err)
	}
	good.SetPoolSize(backend.MaxWarmPool)
	if err := good.Validate(); err != nil || good.ReuseContainer {
		t.Errorf("warm pool with per-session containers: %v (reuse %v)", err, good.ReuseContainer)
	}
	for _, tc := range []struct {
		n     int
		reuse bool
		want  string
	}{
		{-1, false, "environment.docker.warm_pool: want 0 to 64"},
		{65, false, "environment.docker.warm_pool: want 0 to 64"},
		{3, true, "environment.docker.warm_pool = 3 needs environment.docker.reuse_container = false"},
	} {
		c := good
		c.WarmPool, c.ReuseContainer = tc.n, tc.reuse
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("warm_pool %d reuse %v: %v, want %q", tc.n, tc.reuse, err, tc.want)
		}
	}
}

func TestFingerprintFollowsConfig(t *testing.T) {
	t.Setenv("DOCKER_HOST", "")
	a, b := t.TempDir(), t.TempDir()
	cfg := DefaultConfig()
	cfg.Image = "img"
	cfg.Volumes = []Volume{{Host: a, Container: "/workspace"}}
	helper := binaryInfo{sha: "aa", size: 10 << 20}
	s1, err := buildSpec(cfg, "sha256:1", helper, false)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := buildSpec(cfg, "sha256:1", helper, false)
	if s1.fingerprint() != s2.fingerprint() {
		t.Errorf("same config, different fingerprints")
	}
	for name, change := range map[string]func(c *Config){
		"mount":   func(c *Config) { c.Volumes = []Volume{{Host: b, Container: "/workspace"}} },
		"ro":      func(c *Config) { c.Volumes = []Volume{{Host: a, Container: "/workspace", ReadOnly: true}} },
		"env":     func(c *Config) { c.Env = map[string]string{"A": "1"} },
		"memory":  func(c *Config) { c.Memory = 2 << 30 },
		"user":    func(c *Config) { c.User = "1000:1000" },
		"network": func(c *Config) { c.Network = "bridge" },
		"caps":    func(c *Config) { c.CapAdd = []string{"NET_BIND_SERVICE"} },
		"runtime": func(c *Config) { c.Runtime = "runsc" },
		"rootfs":  func(c *Config) { c.ReadOnlyRootfs = true },
		"helper":  func(c *Config) { c.Helper = HelperOff },
		"tmp":     func(c *Config) { c.TmpSize = 1 << 30 },
	} {
		c := cfg
		change(&c)
		s, err := buildSpec(c, "sha256:1", helper, false)
		if err != nil {
			t.Fatal(err)
		}
		if s.fingerprint() == s1.fingerprint() {
			t.Errorf("%s: fingerprint unchanged", name)
		}
	}
	s3, _ := buildSpec(cfg, "sha256:2", helper, false)
	if s3.fingerprint() == s1.fingerprint() {
		t.Errorf("image: fingerprint unchanged")
	}
	s4, _ := buildSpec(cfg, "sha256:1", binaryInfo{sha: "bb", size: 10 << 20}, false)
	if s4.fingerprint() == s1.fingerprint() {
		t.Errorf("helper binary: fingerprint unchanged")
	}
	// The daemon's default runtime turned out to be gVisor: another seccomp profile.
	s5, _ := buildSpec(cfg, "sha256:1", helper, true)
	if s5.fingerprint() == s1.fingerprint() || s5.Seccomp == s1.Seccomp {
		t.Errorf("gVisor: fingerprint or profile unchanged")
	}
}

// A volume nested in a writable volume is refused: from inside, a command could swap the
// inner directory for a symlink (to /etc, say), which Docker follows on the host when the
// container starts again.
func TestValidateRefusesVolumesInsideWritableVolumes(t *testing.T) {
	t.Setenv("DOCKER_HOST", "")
	outer := t.TempDir()
	inner := filepath.Join(outer, "inner")
	other := t.TempDir()
	for _, d := range []string{inner, filepath.Join(other, "real")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A host path that reaches another directory through a symlink inside the workspace:
	// the symlink can be changed from inside, so it counts as nested too.
	viaLink := filepath.Join(outer, "link")
	if err := os.Symlink(filepath.Join(other, "real"), viaLink); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		volumes []Volume
		want    string // "" for accepted
	}{
		{"inner ro in outer rw", []Volume{{Host: outer, Container: "/workspace"}, {Host: inner, Container: "/inner", ReadOnly: true}},
			"volumes[1].host: refused: " + inner + " lies inside volumes[0].host (" + outer + "), which is mounted writable"},
		{"inner rw in outer rw", []Volume{{Host: outer, Container: "/workspace"}, {Host: inner, Container: "/inner"}},
			"volumes[1].host: refused"},
		{"outer listed second", []Volume{{Host: inner, Container: "/inner", ReadOnly: true}, {Host: outer, Container: "/workspace"}},
			"volumes[0].host: refused: " + inner + " lies inside volumes[1].host"},
		{"through a symlink in the outer one", []Volume{{Host: outer, Container: "/workspace"}, {Host: viaLink, Container: "/x", ReadOnly: true}},
			"volumes[1].host: refused"},
		{"unclean spelling", []Volume{{Host: outer + "/", Container: "/workspace"}, {Host: outer + "/./inner", Container: "/inner", ReadOnly: true}},
			"volumes[1].host: refused"},
		{"inner rw in outer ro", []Volume{{Host: outer, Container: "/workspace", ReadOnly: true}, {Host: inner, Container: "/inner"}}, ""},
		{"both ro", []Volume{{Host: outer, Container: "/workspace", ReadOnly: true}, {Host: inner, Container: "/inner", ReadOnly: true}}, ""},
		{"same directory twice", []Volume{{Host: outer, Container: "/workspace"}, {Host: outer, Container: "/again", ReadOnly: true}}, ""},
		{"siblings", []Volume{{Host: outer, Container: "/workspace"}, {Host: other, Container: "/other"}}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Image = "img"
			cfg.Volumes = tc.volumes
			err := cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), key+tc.want)):
				t.Errorf("error = %v, want one containing %q", err, key+tc.want)
			}
		})
	}
}

// The socket of the daemon named by environment.docker.host is protected like DOCKER_HOST's,
// and a directory holding any unix socket at its top level is refused, whatever the name.
func TestSocketsRefused(t *testing.T) {
	t.Setenv("DOCKER_HOST", "")
	if why := refusal("/srv/d", daemonSockets("unix:///srv/d/sub/api.sock")); !strings.Contains(why, "contains the Docker daemon's socket /srv/d/sub/api.sock") {
		t.Errorf("directory above the configured daemon's socket: %q", why)
	}
	if why := refusal("/srv/d/sub/api.sock", daemonSockets("unix:///srv/d/sub/api.sock")); why == "" {
		t.Errorf("the configured daemon's socket itself was not refused")
	}
	if why := refusal("/srv/d", daemonSockets("tcp://127.0.0.1:2375")); why != "" {
		t.Errorf("a tcp daemon address protects no directory: %q", why)
	}

	// A short directory: unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("/tmp", "airlock-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	l, err := net.Listen("unix", filepath.Join(dir, "api.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	deeper := filepath.Join(dir, "sub", "deeper")
	if err := os.MkdirAll(deeper, 0o755); err != nil {
		t.Fatal(err)
	}

	cfg := DefaultConfig()
	cfg.Image = "img"
	cfg.Volumes = []Volume{{Host: dir, Container: "/s", ReadOnly: true}}
	err = cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "volumes[0].host: refused: "+dir+" contains the unix socket api.sock") {
		t.Errorf("directory holding a socket: %v", err)
	}
	cfg.Volumes = []Volume{{Host: filepath.Join(dir, "sub"), Container: "/s", ReadOnly: true}}
	if err := cfg.Validate(); err != nil {
		t.Errorf("directory without sockets at its top level refused: %v", err)
	}
	cfg.Host = "unix://" + filepath.Join(deeper, "docker.sock") // need not exist
	err = cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "contains the Docker daemon's socket") {
		t.Errorf("directory above environment.docker.host's socket: %v", err)
	}
}

// memory = 0 and cpus = 0 would remove the limits; they are refused, naming the key.
func TestValidateRefusesNoLimits(t *testing.T) {
	t.Setenv("DOCKER_HOST", "")
	tests := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"memory 0", func(c *Config) { c.Memory = 0 }, "environment.docker.memory: 0 would remove the memory limit"},
		{"memory tiny", func(c *Config) { c.Memory = 1 << 20 }, "environment.docker.memory: 1048576 bytes is below"},
		{"cpus 0", func(c *Config) { c.CPUs = 0 }, "environment.docker.cpus: 0 would remove the CPU limit"},
		{"cpus negative", func(c *Config) { c.CPUs = -1 }, "environment.docker.cpus: must be"},
		{"cpus NaN", func(c *Config) { c.CPUs = math.NaN() }, "environment.docker.cpus: must be"},
		{"tmp_size 0", func(c *Config) { c.TmpSize = 0 }, "environment.docker.tmp_size: 0 would remove the /tmp size limit"},
		{"tmp_size tiny", func(c *Config) { c.TmpSize = 4096 }, "environment.docker.tmp_size: 4096 bytes is below"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Image = "img"
			tc.change(&cfg)
			if err := cfg.withDefaults().Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
	cfg := DefaultConfig()
	cfg.Image = "img"
	s, err := buildSpec(cfg, "sha256:1", binaryInfo{}, false)
	if err != nil {
		t.Fatal(err)
	}
	_, hc := s.engine(nil)
	if hc.Memory != 1<<30 || hc.NanoCPUs != 1e9 || hc.PidsLimit == nil || *hc.PidsLimit != 256 {
		t.Errorf("default limits: memory %d cpus %d pids %v", hc.Memory, hc.NanoCPUs, hc.PidsLimit)
	}
	if !strings.Contains(hc.Tmpfs["/tmp"], "size=268435456") || hc.CgroupnsMode != "private" {
		t.Errorf("default /tmp %q, cgroupns %q", hc.Tmpfs["/tmp"], hc.CgroupnsMode)
	}
}

// With a read-only root filesystem the helper gets a root-only tmpfs of its own at /.airlock,
// never a directory under the world-writable /tmp; without a helper there is none.
func TestHelperDirectoryInReadOnlyRootfs(t *testing.T) {
	t.Setenv("DOCKER_HOST", "")
	cfg := DefaultConfig()
	cfg.Image = "img"
	cfg.ReadOnlyRootfs = true
	s, err := buildSpec(cfg, "sha256:1", binaryInfo{sha: "aa", size: 40 << 20}, false)
	if err != nil {
		t.Fatal(err)
	}
	_, hc := s.engine(nil)
	opts, ok := hc.Tmpfs[markDir]
	if !ok || !strings.Contains(opts, "mode=0755") || !strings.Contains(opts, "size=83886080") || strings.Contains(opts, "noexec") {
		t.Errorf("helper tmpfs: %q", hc.Tmpfs)
	}
	cfg.Helper = HelperOff
	s, _ = buildSpec(cfg, "sha256:1", binaryInfo{}, false)
	if _, hc := s.engine(nil); hc.Tmpfs[markDir] != "" {
		t.Errorf("helper tmpfs without a helper: %q", hc.Tmpfs)
	}
	cfg.Helper = HelperAuto
	cfg.Tmpfs = []Tmpfs{{Path: markDir}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "tmpfs[0].path: /.airlock is already used by the resident helper's directory") {
		t.Errorf("a tmpfs over the helper's directory: %v", err)
	}
}
