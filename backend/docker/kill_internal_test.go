package docker

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
)

// TestKillScriptSparesAReusedPID: the kill of a timed-out exec-mode command reads its
// wrapper's PID from a file. When that wrapper ended meanwhile (its own watchdog killed it)
// the PID may already lead another command's group — which must survive; a file naming the
// live wrapper, start time and all, still kills it.
func TestKillScriptSparesAReusedPID(t *testing.T) {
	dockertest.Client(t)
	cfg := DefaultConfig()
	cfg.Image = dockertest.Image(t)
	cfg.ContainerNamePrefix = fmt.Sprintf("airlocktest_%d_kill_", os.Getpid())
	cfg.Volumes = []Volume{{Host: dockertest.Workspace(t), Container: "/workspace"}}
	cfg.Memory = 256 << 20
	cfg.Helper = HelperOff
	cfg.ReuseContainer = false
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	e, err := New(ctx, cfg)
	if e != nil {
		t.Cleanup(func() { _ = e.Close(context.Background()) })
	}
	if err != nil {
		t.Fatal(err)
	}
	sh := func(cmd string) string {
		t.Helper()
		res, err := e.Exec(ctx, backend.Request{Command: cmd})
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(res.Stdout))
	}
	kill := func(file string) {
		t.Helper()
		if _, err := e.Exec(ctx, backend.Request{Argv: []string{"/bin/sh", "-c", killScript, "kill", file, "5"}}); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan backend.Result, 1)
	go func() {
		res, _ := e.Exec(ctx, backend.Request{Command: `read -r l < /proc/$$/stat; set -- ${l##*') '}; echo "$3" > /tmp/victim.pgid; sleep 60; echo survived`})
		done <- res
	}()
	var pgid string
	for i := 0; i < 500 && pgid == ""; i++ {
		pgid = sh("cat /tmp/victim.pgid 2>/dev/null")
		time.Sleep(20 * time.Millisecond)
	}
	if pgid == "" {
		t.Fatal("the victim never said its group")
	}
	start := sh("cut -d' ' -f22 /proc/" + pgid + "/stat")
	// A file left by a wrapper that had this PID before: the start time differs.
	sh("echo '" + pgid + " 1' > /tmp/stale.pid; echo '" + pgid + " " + start + "' > /tmp/live.pid")
	kill("/tmp/stale.pid")
	if got := sh("kill -0 -" + pgid + " 2>/dev/null && echo alive"); got != "alive" {
		t.Fatalf("a stale pid file killed another command's group")
	}
	kill("/tmp/live.pid")
	select {
	case res := <-done:
		if string(res.Stdout) == "survived\n" {
			t.Errorf("the true pid file did not kill its group: %+v", res)
		}
	case <-time.After(45 * time.Second):
		t.Errorf("the true pid file did not kill its group")
	}
}

// TestNoReuseOfAnotherUsersContainer: a reused container is found by name and fingerprint;
// one with the same configuration that another uid created is refused, not shared.
func TestNoReuseOfAnotherUsersContainer(t *testing.T) {
	cli := dockertest.Client(t)
	cfg := DefaultConfig()
	cfg.Image = dockertest.Image(t)
	cfg.ContainerNamePrefix = fmt.Sprintf("airlocktest_%d_reuse_", os.Getpid())
	cfg.Volumes = []Volume{{Host: dockertest.Workspace(t), Container: "/workspace"}}
	cfg.Memory = 256 << 20
	cfg.Helper = HelperOff
	cfg.ReuseContainer = true
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	t.Cleanup(func() { dockertest.RemoveContainers(cfg.ContainerNamePrefix) })
	e, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	name, fp := e.name, e.fp
	_ = e.Close(ctx)
	if err := removeContainer(ctx, cli, name); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{labelOwner: ownerValue, labelFingerprint: fp, labelUID: strconv.Itoa(os.Getuid() + 4242), labelReuse: "true"}
	if _, err := cli.ContainerCreate(ctx, &container.Config{Image: cfg.Image, Cmd: []string{"sleep", "60"}, Labels: labels}, nil, nil, nil, name); err != nil {
		t.Fatal(err)
	}
	e, err = New(ctx, cfg)
	if e != nil {
		_ = e.Close(ctx)
	}
	if err == nil || !strings.Contains(err.Error(), "belongs to uid "+strconv.Itoa(os.Getuid()+4242)) {
		t.Fatalf("New with another user's container of the same configuration: %v", err)
	}
}
