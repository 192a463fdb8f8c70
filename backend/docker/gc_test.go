package docker_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
)

// TestHelperProcess is not a test: TestGCRemovesOrphans runs the test binary as a process
// that opens a session container, prints its ID and waits to be killed.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("AIRLOCK_DOCKER_HELPER") != "1" {
		t.Skip("helper process only")
	}
	cfg := docker.DefaultConfig()
	cfg.Image = dockertest.ImageName
	cfg.ContainerNamePrefix = os.Getenv("AIRLOCK_DOCKER_PREFIX")
	cfg.ReuseContainer = false
	cfg.Helper = docker.HelperOff
	env, err := docker.New(context.Background(), cfg)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(env.ContainerID())
	time.Sleep(time.Hour)
}

func TestGCRemovesOrphans(t *testing.T) {
	cli := dockertest.Client(t)
	dockertest.Image(t)
	gcPrefix := prefix + "gc_"

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "AIRLOCK_DOCKER_HELPER=1", "AIRLOCK_DOCKER_PREFIX="+gcPrefix)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	orphan := strings.TrimSpace(line)
	_ = cmd.Process.Kill() // SIGKILL: Close never runs
	_ = cmd.Wait()
	if len(orphan) != 64 {
		t.Fatalf("helper process said %q", line)
	}

	// A container stuck in Created, as a start that failed half-way leaves one.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hostname, _ := os.Hostname()
	stuckOf := func(name, uid string) string {
		t.Helper()
		labels := map[string]string{"dev.airlock.owner": "airlock", "dev.airlock.reuse": "true", "dev.airlock.idle-ttl": "30m",
			"dev.airlock.hostname": hostname}
		if uid != "" {
			labels["dev.airlock.uid"] = uid
		}
		c, err := cli.ContainerCreate(ctx, &container.Config{Image: dockertest.ImageName, Cmd: []string{"true"}, Labels: labels},
			nil, nil, nil, gcPrefix+name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cli.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true}) })
		return c.ID
	}
	stuck := stuckOf("stuck", strconv.Itoa(os.Getuid()))
	// Another user's, and one from before containers carried a uid: not ours to remove.
	others := []string{stuckOf("stuck-other", strconv.Itoa(os.Getuid()+4242)), stuckOf("stuck-unlabelled", "")}
	// A live session of this process must survive.
	cfg := testConfig(t, dockertest.Workspace(t), docker.ModeExec)
	cfg.ContainerNamePrefix = gcPrefix
	cfg.ReuseContainer = false
	live := newEnv(t, cfg)

	opts := docker.GCOptions{MinAge: time.Nanosecond, NamePrefix: gcPrefix, DryRun: true}
	items, err := docker.GC(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	found, other := map[string]string{}, map[string]string{}
	for _, it := range items {
		if it.Removed {
			t.Errorf("dry run removed %s", it.Name)
		}
		if it.OtherOwner != "" {
			other[it.ID] = it.OtherOwner
			continue
		}
		found[it.ID] = it.Reason
	}
	for _, id := range others {
		if other[id] == "" {
			t.Errorf("container %s of another owner not reported as such: %q %q", id[:12], found, other)
		}
	}
	if !strings.Contains(found[orphan], "session ended") || !strings.Contains(found[stuck], "not running") {
		t.Errorf("gc candidates: %q", found)
	}
	if _, ok := found[live.ContainerID()]; ok {
		t.Errorf("gc would remove a live session's container")
	}
	opts.DryRun = false
	if _, err := docker.GC(ctx, opts); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{orphan, stuck} {
		if _, err := cli.ContainerInspect(ctx, id); err == nil {
			t.Errorf("container %s survived gc", id[:12])
		}
	}
	for _, id := range others {
		if _, err := cli.ContainerInspect(ctx, id); err != nil {
			t.Errorf("gc removed %s of another owner: %v", id[:12], err)
		}
	}
	opts.AllOwners = true
	if _, err := docker.GC(ctx, opts); err != nil {
		t.Fatal(err)
	}
	for _, id := range others {
		if _, err := cli.ContainerInspect(ctx, id); err == nil {
			t.Errorf("gc with AllOwners left %s", id[:12])
		}
	}
	sh(t, live, "true")
}
