package docker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
			_, err := CheckHostPath(tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckHostPath(%q) = %v, want an error containing %q", tc.path, err, tc.want)
			}
		})
	}
	if real, err := CheckHostPath(ok); err != nil || real != ok {
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
		if got := refusal(path) != ""; got != refused {
			t.Errorf("refusal(%q) = %q, want refused=%v", path, refusal(path), refused)
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
		why := refusal(p)
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
	cfg.Agent = "sometimes"
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
		"environment.docker.agent:",
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
}

func TestFingerprintFollowsConfig(t *testing.T) {
	t.Setenv("DOCKER_HOST", "")
	a, b := t.TempDir(), t.TempDir()
	cfg := DefaultConfig()
	cfg.Image = "img"
	cfg.Volumes = []Volume{{Host: a, Container: "/workspace"}}
	s1, err := buildSpec(cfg, "sha256:1")
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := buildSpec(cfg, "sha256:1")
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
	} {
		c := cfg
		change(&c)
		s, err := buildSpec(c, "sha256:1")
		if err != nil {
			t.Fatal(err)
		}
		if s.fingerprint() == s1.fingerprint() {
			t.Errorf("%s: fingerprint unchanged", name)
		}
	}
	s3, _ := buildSpec(cfg, "sha256:2")
	if s3.fingerprint() == s1.fingerprint() {
		t.Errorf("image: fingerprint unchanged")
	}
}
