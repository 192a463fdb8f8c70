package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/backend/ssh/sshtest"
)

// sshSetup writes a config for a fresh sshd and returns its directory and the remote user.
func sshSetup(t *testing.T) (string, string) {
	t.Helper()
	srv := sshtest.Start(t)
	c := srv.Config
	dir := t.TempDir()
	writeConfig(t, dir, fmt.Sprintf(`[environment]
type = "ssh"
timeout = 20
[environment.ssh]
host = %q
port = %d
user = %q
key_path = %q
known_hosts = %q
workdir = %q
helper_binary = %q
[approvals]
mode = "auto"
`, c.Host, c.Port, c.User, c.KeyPath, c.KnownHosts, c.Workdir, airlockBin))
	return dir, c.User
}

func TestSSHCallAndBench(t *testing.T) {
	t.Parallel()
	dir, user := sshSetup(t)
	out, errOut, code := run(t, dir, "", []string{"MY_API_TOKEN=tok-secret-x", "AWS_SECRET_ACCESS_KEY=aws-secret-y"}, "exec", "--", "env; whoami")
	if code != 0 || strings.Contains(out, "secret-") || !strings.Contains(out, user) {
		t.Errorf("exec over ssh: exit %d\n%s\n%s", code, out, errOut)
	}
	rs := call(t, dir, `[{"name":"terminal","arguments":{"command":"echo one"}},{"name":"terminal","arguments":{"command":"exit 4"}}]`)
	if rs[0].Content != "one\n" || rs[1].Metadata.ExitCode == nil || *rs[1].Metadata.ExitCode != 4 {
		t.Errorf("call over ssh: %+v", rs)
	}
	for _, mode := range []string{"helper", "session"} {
		out, errOut, code := run(t, dir, "", nil, "bench", "--backend", "ssh", "--n", "5", "--json", "--mode", mode)
		if code != 0 {
			t.Fatalf("bench %s: %d %s", mode, code, errOut)
		}
		var r struct {
			Backend string  `json:"backend"`
			Mode    string  `json:"mode"`
			N       int     `json:"n"`
			P50     float64 `json:"p50_ms"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Backend != "ssh" || r.Mode != mode || r.N != 5 || r.P50 <= 0 {
			t.Errorf("bench %s: %q %v", mode, out, err)
		}
	}
}
