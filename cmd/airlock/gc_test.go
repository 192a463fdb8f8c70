package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A backend whose server cannot be reached does not keep gc from the others: with the
// docker daemon gone, gc under a local config says what it skipped and exits 0; under a
// docker config the same unreachable daemon fails the run. With no cluster configured at
// all, the Kubernetes backend has nothing to collect and says nothing.
func TestGCGoesOnPastAnUnreachableBackend(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-daemon.sock"))
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "no-kubeconfig"))
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := os.Mkdir(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	local := write("local.toml", "[environment]\ntype = \"local\"\nworkspace = \"ws\"\n")
	code, out, errOut := runCmd(t, "", "gc", "--dry-run", "--config", local)
	if code != 0 || !strings.Contains(errOut, "skipped docker") {
		t.Errorf("local config: exit %d, stdout %q, stderr %q; want 0 with docker skipped", code, out, errOut)
	}
	// No cluster configured anywhere: nothing to say about Kubernetes.
	if strings.Contains(errOut, "kubernetes") {
		t.Errorf("with no cluster configured, gc spoke of kubernetes: %q", errOut)
	}
	docker := write("docker.toml", "[environment]\ntype = \"docker\"\n[environment.docker]\nimage = \"busybox\"\n")
	code, out, errOut = runCmd(t, "", "gc", "--dry-run", "--config", docker)
	if code == 0 || !strings.Contains(errOut, "airlock gc: docker:") {
		t.Errorf("docker config: exit %d, stdout %q, stderr %q; want a failure naming docker", code, out, errOut)
	}
}
