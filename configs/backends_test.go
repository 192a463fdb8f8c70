package configs

// The config knows backends only through their records: the tests load every backend of
// the build, as the runtime does.
import (
	"strings"
	"testing"

	_ "github.com/airlock-dev/airlock/backend/all"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/kubernetes"
	"github.com/airlock-dev/airlock/backend/ssh"
)

// TestHelperKeysAndTheirOldNames: the resident helper's keys were named agent and
// agent_binary, a word that means the AI agent. A file gives them under the new names or the
// old ones (still read, the value moved to the new field); both at once is an error that
// names both keys. That the old name is reported as deprecated is Describe's (the backends'
// tests).
func TestHelperKeysAndTheirOldNames(t *testing.T) {
	t.Parallel()
	value := func(cfg *Config, kind string) string {
		switch s := cfg.Environment.Section(kind).(type) {
		case *docker.Config:
			if s.OldHelper != "" || s.OldHelperBinary != "" {
				return "old field left set"
			}
			return s.Helper + "," + s.HelperBinary
		case *ssh.Config:
			if s.OldHelperBinary != "" {
				return "old field left set"
			}
			return s.HelperBinary
		case *kubernetes.Config:
			if s.OldHelperBinary != "" {
				return "old field left set"
			}
			return s.HelperBinary
		}
		return "no section"
	}
	for _, tc := range []struct {
		name, kind, keys, want, err string
	}{
		{"docker new", "docker", "helper = \"off\"\nhelper_binary = \"/h\"\n", "off,/h", ""},
		{"docker old", "docker", "agent = \"off\"\nagent_binary = \"/h\"\n", "off,/h", ""},
		{"docker unset", "docker", "", ",", ""},
		{"docker both", "docker", "helper = \"auto\"\nagent = \"off\"\n", "", "environment.docker.helper and environment.docker.agent are the same setting"},
		{"docker both binaries", "docker", "helper_binary = \"/a\"\nagent_binary = \"/b\"\n", "", "environment.docker.helper_binary and environment.docker.agent_binary"},
		{"ssh new", "ssh", "helper_binary = \"/h\"\n", "/h", ""},
		{"ssh old", "ssh", "agent_binary = \"/h\"\n", "/h", ""},
		{"ssh both", "ssh", "helper_binary = \"/a\"\nagent_binary = \"/b\"\n", "", "environment.ssh.helper_binary and environment.ssh.agent_binary"},
		{"kubernetes new", "kubernetes", "helper_binary = \"/h\"\n", "/h", ""},
		{"kubernetes old", "kubernetes", "agent_binary = \"/h\"\n", "/h", ""},
		{"kubernetes both", "kubernetes", "helper_binary = \"/a\"\nagent_binary = \"/b\"\n", "", "environment.kubernetes.helper_binary and environment.kubernetes.agent_binary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte("[environment]\ntype = \""+tc.kind+"\"\n[environment."+tc.kind+"]\n"+tc.keys), "/base")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := value(cfg, tc.kind); got != tc.want {
				t.Errorf("section gives %q, want %q", got, tc.want)
			}
		})
	}
}
