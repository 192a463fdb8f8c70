package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
)

// dockerSetup returns a config directory for the Docker backend with its own container name
// prefix, and removes the containers it made when the test ends.
func dockerSetup(t *testing.T, extra string) (string, string, *client.Client) {
	t.Helper()
	cli := dockertest.Client(t)
	dir := t.TempDir()
	toml, prefix := dockertest.Config(t, "it", 20, airlockBin, extra)
	writeConfig(t, dir, toml)
	return dir, prefix, cli
}

func hostnameOf(t *testing.T, dir string) string {
	t.Helper()
	rs := call(t, dir, `{"name":"terminal","arguments":{"command":"cat /etc/hostname"}}`)
	if rs[0].Status != "ok" {
		t.Fatalf("hostname: %+v", rs[0])
	}
	return strings.TrimSpace(rs[0].Content)
}

// TestDockerReuseAcrossCalls: two separate airlock call runs with the same config share one
// container; a changed mount gets another.
func TestDockerReuseAcrossCalls(t *testing.T) {
	t.Parallel()
	mountA := t.TempDir()
	dir, _, _ := dockerSetup(t, fmt.Sprintf("volumes = [{host = %q, container = \"/workspace/data\", read_only = true}]", mountA))
	first, second := hostnameOf(t, dir), hostnameOf(t, dir)
	if first == "" || first != second {
		t.Fatalf("same config, containers %q and %q", first, second)
	}
	cfg, _ := os.ReadFile(filepath.Join(dir, "airlock.toml"))
	mountB := t.TempDir()
	writeConfig(t, dir, strings.Replace(string(cfg), mountA, mountB, 1))
	if third := hostnameOf(t, dir); third == first {
		t.Errorf("a changed mount reused container %q", first)
	}
	// Secrets in airlock's environment never reach the container.
	out, _, code := run(t, dir, "", []string{"MY_API_TOKEN=tok-secret-x", "DB_PASSWORD=pw-secret-y"}, "exec", "--", "env")
	if code != 0 || strings.Contains(out, "secret-") {
		t.Errorf("exec env in container: exit %d\n%s", code, out)
	}
}

// TestDockerGCAfterSIGKILL kills airlock mid-call with SIGKILL, leaving its non-reused
// container behind, and checks that airlock gc removes it.
func TestDockerGCAfterSIGKILL(t *testing.T) {
	t.Parallel()
	dir, prefix, cli := dockerSetup(t, "reuse_container = false")
	cmd := exec.Command(airlockBin, "exec", "--", "sleep 60")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var id string
	for i := 0; i < 200 && id == ""; i++ {
		list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("name", prefix))})
		if err == nil && len(list) > 0 && list[0].State == "running" {
			id = list[0].ID
		}
		time.Sleep(100 * time.Millisecond)
	}
	if id == "" {
		_ = cmd.Process.Kill()
		t.Fatal("no container appeared")
	}
	time.Sleep(500 * time.Millisecond) // let the command start inside
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if _, err := cli.ContainerInspect(ctx, id); err != nil {
		t.Fatalf("container gone before gc: %v", err)
	}
	out, errOut, code := run(t, dir, "", nil, "gc", "--min-age", "0s")
	if code != 0 {
		t.Fatalf("gc exit %d: %s %s", code, out, errOut)
	}
	if _, err := cli.ContainerInspect(ctx, id); err == nil {
		t.Errorf("orphan %s survived gc:\n%s%s", id[:12], out, errOut)
	}
}

func TestBenchJSON(t *testing.T) {
	t.Parallel()
	dir, _, _ := dockerSetup(t, "")
	// "agent" is the helper's former name, still taken and reported as "helper".
	for _, mode := range []string{"helper", "exec", "agent"} {
		out, errOut, code := run(t, dir, "", nil, "bench", "--backend", "docker", "--n", "5", "--json", "--mode", mode)
		if code != 0 {
			t.Fatalf("bench %s: %d %s", mode, code, errOut)
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("bench output %q: %v", out, err)
		}
		for _, k := range []string{"backend", "mode", "n", "p50_ms", "p90_ms", "p99_ms"} {
			if _, ok := r[k]; !ok {
				t.Errorf("bench %s: no %q in %s", mode, k, out)
			}
		}
		if r["backend"] != "docker" || r["mode"] != backend.CanonicalMode(mode) || r["n"] != float64(5) {
			t.Errorf("bench %s: %s", mode, out)
		}
		if strings.Contains(errOut, "asked for mode") {
			t.Errorf("bench %s: %s", mode, errOut)
		}
	}
}

// bench --session-start times cold, warm and raw session starts, each sequential and in a
// burst, and leaves no container behind.
func TestBenchSessionStartJSON(t *testing.T) {
	t.Parallel()
	dir, prefix, cli := dockerSetup(t, "")
	out, errOut, code := run(t, dir, "", nil, "bench", "--backend", "docker", "--session-start", "--n", "2", "--burst", "2", "--pool", "2", "--json")
	if code != 0 {
		t.Fatalf("bench --session-start: %d %s", code, errOut)
	}
	r := sessionStartReport(t, out, 2)
	if r.Backend != "docker" || r.Pool != 2 || r.Warm == nil || r.Raw == nil || r.RawName == "" {
		t.Fatalf("bench output: %s", out)
	}
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("name", prefix))})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		t.Errorf("left behind: %v %s", c.Names, c.State)
	}
}
