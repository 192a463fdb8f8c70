package docker_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
	"github.com/airlock-dev/airlock/envpool"
)

// poolConfig is a per-session configuration with a name prefix of the test's own.
func poolConfig(t *testing.T, sub string) docker.Config {
	t.Helper()
	cfg := testConfig(t, dockertest.Workspace(t), docker.ModeHelper)
	cfg.ContainerNamePrefix = prefix + sub + "_"
	cfg.SetPoolSize(1) // per-session containers
	return cfg
}

func memberMaker(cfg docker.Config) envpool.MakeFunc {
	return func(ctx context.Context) (backend.Claimer, error) {
		c := cfg
		c.PoolMember = true
		return docker.New(ctx, c)
	}
}

func newPool(t *testing.T, cfg docker.Config, size int) *envpool.Pool {
	t.Helper()
	p := envpool.New(size, memberMaker(cfg), nil)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.WaitReady(ctx, size); err != nil {
		t.Fatalf("pool of %d not ready: %v (stats %+v)", size, err, p.Stats())
	}
	return p
}

// containers lists the containers whose name starts with namePrefix, by name.
func containers(t *testing.T, cli *client.Client, namePrefix string) map[string]string {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("name", namePrefix))})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range list {
		if name := strings.TrimPrefix(c.Names[0], "/"); strings.HasPrefix(name, namePrefix) {
			out[name] = c.ID
		}
	}
	return out
}

// burstResult is what one session of a burst got.
type burstResult struct {
	env  backend.Environment
	warm bool
	out  string // hostname, then how many sessions' marks its /tmp holds
	err  error
}

// burst opens n sessions at once: each takes a pool container or, when none is ready, starts
// one cold, as the runtime does, and runs one command.
func burst(p *envpool.Pool, cfg docker.Config, n int) []burstResult {
	res := make([]burstResult, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			r := &res[i]
			r.env, r.warm = p.Take(ctx, fmt.Sprint("s-", i))
			if !r.warm {
				if r.env, r.err = docker.New(ctx, cfg); r.err != nil {
					return
				}
			}
			out, err := r.env.Exec(ctx, backend.Request{Command: fmt.Sprintf("hostname; touch /tmp/mine-%d; ls /tmp | grep -c mine-", i)})
			r.out, r.err = string(out.Stdout), err
		}()
	}
	close(start)
	wg.Wait()
	return res
}

// A burst of 20 sessions against a pool of 4: each session takes a pool container or, when
// none is ready, starts one cold; none fails, no container serves two sessions, and the
// claimed ones carry a session's name. Closing leaves no container behind.
func TestWarmPoolBurstClaims(t *testing.T) {
	cli := dockertest.Client(t)
	cfg := poolConfig(t, "burst")
	p := newPool(t, cfg, 4)
	const n = 20
	res := burst(p, cfg, n)
	hosts := map[string]int{}
	warm := 0
	for i, r := range res {
		if r.env != nil {
			t.Cleanup(func() { _ = r.env.Close(context.Background()) })
		}
		if r.err != nil {
			t.Fatalf("session %d: %v", i, r.err)
		}
		host, count, _ := strings.Cut(strings.TrimSpace(r.out), "\n")
		if prev, dup := hosts[host]; dup {
			t.Errorf("sessions %d and %d share container %s", prev, i, host)
		}
		hosts[host] = i
		if count != "1" {
			t.Errorf("session %d sees %s sessions' files in its /tmp, want only its own", i, count)
		}
		if r.warm {
			warm++
			if tgt := r.env.Describe().Target; !strings.HasPrefix(tgt, cfg.ContainerNamePrefix+"s") {
				t.Errorf("claimed container is named %q, want a session's name", tgt)
			}
		}
	}
	if s := p.Stats(); warm != 4 || s.Claimed != 4 || s.Misses != n-4 {
		t.Errorf("%d sessions took a pool container, want the pool's 4 (stats %+v)", warm, s)
	}
	// Every session's close and the pool's leave nothing.
	for _, r := range res {
		if err := r.env.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}
	if err := p.Close(context.Background()); err != nil {
		t.Error(err)
	}
	if left := containers(t, cli, cfg.ContainerNamePrefix); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// A pool container removed from outside is noticed (its helper's stream ends), closed and
// replaced; the pool then hands out only live ones.
func TestWarmPoolReplacesDeadMember(t *testing.T) {
	cli := dockertest.Client(t)
	cfg := poolConfig(t, "dead")
	p := newPool(t, cfg, 2)
	members := containers(t, cli, cfg.ContainerNamePrefix+"pool-")
	if len(members) != 2 {
		t.Fatalf("pool containers: %v", members)
	}
	var victim string
	for _, id := range members {
		victim = id
		break
	}
	if err := cli.ContainerRemove(context.Background(), victim, container.RemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for p.Stats().Lost < 1 || p.Ready() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("dead member not replaced: stats %+v, ready %d", p.Stats(), p.Ready())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := range 2 {
		env, ok := p.Take(context.Background(), fmt.Sprint("s-", i))
		if !ok {
			t.Fatalf("take %d: pool empty", i)
		}
		t.Cleanup(func() { _ = env.Close(context.Background()) })
		if id := env.(*docker.Env).ContainerID(); id == victim {
			t.Fatalf("the removed container was handed out")
		}
		if out := sh(t, env, "echo alive"); out != "alive" {
			t.Errorf("claimed member says %q", out)
		}
		if notes := env.Describe().Notes; strings.Contains(strings.Join(notes, " "), "recreated") {
			t.Errorf("a claimed member had to be recreated: %q", notes)
		}
	}
}

// TestPoolHelperProcess is not a test: TestWarmPoolGCAfterKill runs the test binary as a
// process that fills a warm pool, says so and waits to be killed.
func TestPoolHelperProcess(t *testing.T) {
	if os.Getenv("AIRLOCK_DOCKER_POOL_HELPER") != "1" {
		t.Skip("helper process only")
	}
	cfg := docker.DefaultConfig()
	cfg.Image = dockertest.ImageName
	cfg.ContainerNamePrefix = os.Getenv("AIRLOCK_DOCKER_PREFIX")
	cfg.HelperBinary = os.Getenv("AIRLOCK_DOCKER_AGENT")
	cfg.SetPoolSize(3)
	p := envpool.New(3, memberMaker(cfg), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.WaitReady(ctx, 3); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	time.Sleep(time.Hour)
}

// The pool containers of a process killed with SIGKILL (no Close ran) are removed by gc.
func TestWarmPoolGCAfterKill(t *testing.T) {
	cli := dockertest.Client(t)
	dockertest.Image(t)
	gcPrefix := prefix + "poolgc_"
	cmd := exec.Command(os.Args[0], "-test.run=^TestPoolHelperProcess$")
	cmd.Env = append(os.Environ(), "AIRLOCK_DOCKER_POOL_HELPER=1", "AIRLOCK_DOCKER_PREFIX="+gcPrefix,
		"AIRLOCK_DOCKER_AGENT="+dockertest.HelperBinary(t))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("helper process said %q", line)
	}
	orphans := containers(t, cli, gcPrefix)
	if len(orphans) != 3 {
		t.Fatalf("after the kill: %v, want the 3 pool containers", orphans)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	items, err := docker.GC(ctx, docker.GCOptions{NamePrefix: gcPrefix})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.Err != nil || !strings.Contains(it.Reason, "process") {
			t.Errorf("gc item %+v", it)
		}
	}
	if left := containers(t, cli, gcPrefix); len(left) > 0 {
		t.Errorf("gc left pool containers of a dead process: %v", left)
	}
}
