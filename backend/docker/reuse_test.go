package docker_test

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
)

func TestReuseFollowsFingerprint(t *testing.T) {
	cli := dockertest.Client(t)
	ws := dockertest.Workspace(t)
	a := newEnv(t, testConfig(t, ws, docker.ModeHelper))
	b := newEnv(t, testConfig(t, ws, docker.ModeHelper))
	if a.ContainerID() != b.ContainerID() {
		t.Errorf("same config, different containers: %s %s", a.ContainerID(), b.ContainerID())
	}
	sh(t, a, "echo shared > /tmp/mark")
	if got := sh(t, b, "cat /tmp/mark"); got != "shared" {
		t.Errorf("second env does not see the first's container: %q", got)
	}
	// Closing one leaves the reused container up for the other.
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	sh(t, b, "true")

	other := testConfig(t, dockertest.Workspace(t), docker.ModeHelper)
	c := newEnv(t, other)
	if c.ContainerID() == b.ContainerID() {
		t.Fatalf("a different mount reused the container")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := cli.ContainerInspect(ctx, c.ContainerID())
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Mounts) == 0 || info.Mounts[0].Source == ws && len(info.Mounts) == 1 {
		t.Errorf("mounts of the new container: %+v", info.Mounts)
	}

	// A session container goes away on Close.
	cfg := testConfig(t, ws, docker.ModeExec)
	cfg.ReuseContainer = false
	d := newEnv(t, cfg)
	id := d.ContainerID()
	if id == b.ContainerID() {
		t.Errorf("a non-reused env got the reused container")
	}
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerInspect(ctx, id); err == nil {
		t.Errorf("session container %s still exists after Close", id)
	}
}
