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
// old ones (read as the new, which the backend's record declares in Renamed, and noted as
// deprecated in the section, whose Describe shows the notes); both at once is an error that
// names both keys.
func TestHelperKeysAndTheirOldNames(t *testing.T) {
	t.Parallel()
	const why = " (the resident helper is not the agent)"
	value := func(cfg *Config, kind string) (string, []string) {
		switch s := cfg.Environment.Section(kind).(type) {
		case *docker.Config:
			return s.Helper + "," + s.HelperBinary, s.OldKeyNotes()
		case *ssh.Config:
			return s.HelperBinary, s.OldKeyNotes()
		case *kubernetes.Config:
			return s.HelperBinary, s.OldKeyNotes()
		}
		return "no section", nil
	}
	for _, tc := range []struct {
		name, kind, keys, want string
		notes                  []string
		err                    string
	}{
		{name: "docker new", kind: "docker", keys: "helper = \"off\"\nhelper_binary = \"/h\"\n", want: "off,/h"},
		{name: "docker old", kind: "docker", keys: "agent = \"off\"\nagent_binary = \"/h\"\n", want: "off,/h", notes: []string{
			"environment.docker.agent is deprecated: call it helper" + why,
			"environment.docker.agent_binary is deprecated: call it helper_binary" + why}},
		{name: "docker one old", kind: "docker", keys: "helper = \"off\"\nagent_binary = \"/h\"\n", want: "off,/h", notes: []string{
			"environment.docker.agent_binary is deprecated: call it helper_binary" + why}},
		{name: "docker unset", kind: "docker", want: docker.HelperAuto + ","},
		{name: "docker both", kind: "docker", keys: "helper = \"auto\"\nagent = \"off\"\n",
			err: "environment.docker.helper and environment.docker.agent are the same setting (agent is its deprecated former name): give only helper"},
		{name: "docker both binaries", kind: "docker", keys: "helper_binary = \"/a\"\nagent_binary = \"/b\"\n",
			err: "environment.docker.helper_binary and environment.docker.agent_binary are the same setting"},
		{name: "ssh new", kind: "ssh", keys: "helper_binary = \"/h\"\n", want: "/h"},
		{name: "ssh old", kind: "ssh", keys: "agent_binary = \"/h\"\n", want: "/h", notes: []string{
			"environment.ssh.agent_binary is deprecated: call it helper_binary" + why}},
		{name: "ssh both", kind: "ssh", keys: "helper_binary = \"/a\"\nagent_binary = \"/b\"\n",
			err: "environment.ssh.helper_binary and environment.ssh.agent_binary are the same setting"},
		{name: "kubernetes new", kind: "kubernetes", keys: "helper_binary = \"/h\"\n", want: "/h"},
		{name: "kubernetes old", kind: "kubernetes", keys: "agent_binary = \"/h\"\n", want: "/h", notes: []string{
			"environment.kubernetes.agent_binary is deprecated: call it helper_binary" + why}},
		{name: "kubernetes both", kind: "kubernetes", keys: "helper_binary = \"/a\"\nagent_binary = \"/b\"\n",
			err: "environment.kubernetes.helper_binary and environment.kubernetes.agent_binary are the same setting"},
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
			got, notes := value(cfg, tc.kind)
			if got != tc.want {
				t.Errorf("section gives %q, want %q", got, tc.want)
			}
			if strings.Join(notes, "\n") != strings.Join(tc.notes, "\n") {
				t.Errorf("section's notes %q, want %q", notes, tc.notes)
			}
		})
	}
}
