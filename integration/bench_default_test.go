package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend/docker/dockertest"
	"github.com/airlock-dev/airlock/backend/helper/helpertest"
	"github.com/airlock-dev/airlock/backend/ssh/sshtest"
)

// benchOut is what `airlock bench --json` prints.
type benchOut struct {
	Backend  string   `json:"backend"`
	Mode     string   `json:"mode"`
	N        int      `json:"n"`
	P50      float64  `json:"p50_ms"`
	Notes    []string `json:"notes"`
	Baseline *struct {
		Name  string  `json:"name"`
		P50   float64 `json:"p50_ms"`
		Error string  `json:"error"`
	} `json:"baseline"`
}

// benchDefaultBuild runs `airlock bench` from the binary a user gets from `go build
// ./cmd/airlock` with a C compiler present (dynamically linked), with no helper_binary set:
// the helper must be that binary itself, and run.
func benchDefaultBuild(t *testing.T, dir, kind string) benchOut {
	t.Helper()
	bin := helpertest.DefaultBuild(t)
	n := "30"
	if v := os.Getenv("AIRLOCK_BENCH_N"); v != "" { // for figures: AIRLOCK_BENCH_N=200 go test -v -run BenchDefaultBuild
		n = v
	}
	cmd := exec.Command(bin, "bench", "--backend", kind, "--n", n, "--json")
	cmd.Dir = dir
	cmd.Env = os.Environ()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench %s: %v\n%s", kind, err, out)
	}
	var r benchOut
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("bench output %q: %v", out, err)
	}
	if r.Backend != kind || r.Mode != "helper" || r.P50 <= 0 || !strings.Contains(strings.Join(r.Notes, " "), "dynamically linked") {
		t.Errorf("bench %s from the default build: %s", kind, out)
	}
	if r.Baseline == nil || r.Baseline.Error != "" || r.Baseline.P50 <= 0 {
		t.Errorf("bench %s: no raw alternative timed beside it: %s", kind, out)
	} else {
		t.Logf("%s helper p50 %.2f ms; same run, %s p50 %.2f ms", kind, r.P50, r.Baseline.Name, r.Baseline.P50)
	}
	return r
}

func TestBenchDefaultBuildDocker(t *testing.T) {
	t.Parallel()
	dockertest.Client(t)
	dir := t.TempDir()
	prefix := fmt.Sprintf("airlock_itdyn_%d_%d_", os.Getpid(), time.Now().UnixNano()%1e9)
	writeConfig(t, dir, fmt.Sprintf("[environment]\ntype = \"docker\"\n[environment.docker]\nimage = %q\ncontainer_name_prefix = %q\nreuse_container = false\n",
		dockertest.Image(t), prefix))
	t.Cleanup(func() { dockertest.RemoveContainers(prefix) })
	benchDefaultBuild(t, dir, "docker")
}

func TestBenchDefaultBuildSSH(t *testing.T) {
	t.Parallel()
	srv := sshtest.Start(t)
	c := srv.Config
	dir := t.TempDir()
	writeConfig(t, dir, fmt.Sprintf("[environment]\ntype = \"ssh\"\n[environment.ssh]\nhost = %q\nport = %d\nuser = %q\nkey_path = %q\nknown_hosts = %q\nworkdir = %q\n",
		c.Host, c.Port, c.User, c.KeyPath, c.KnownHosts, c.Workdir))
	benchDefaultBuild(t, dir, "ssh")
}
