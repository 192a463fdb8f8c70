package docker_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
	"github.com/airlock-dev/airlock/internal/buildtest"
)

// prefix names every container this test process creates, so that cleanup removes only
// those, whoever else shares the daemon.
var prefix = fmt.Sprintf("airlocktest_%d_", os.Getpid())

func TestMain(m *testing.M) {
	code := m.Run()
	dockertest.RemoveContainers(prefix)
	buildtest.Cleanup()
	os.Exit(code)
}

var shared struct {
	once sync.Once
	dir  string
}

// sharedWorkspace is one workspace for the whole test process, so that environments with the
// same configuration share one reused container.
func sharedWorkspace(t *testing.T) string {
	t.Helper()
	shared.once.Do(func() {
		dir, err := buildtest.MkdirTemp("airlock-docker-ws-")
		if err != nil {
			t.Fatal(err)
		}
		_ = os.Chmod(dir, 0o777)
		shared.dir = dir
	})
	return shared.dir
}

// testConfig is a configuration for the test image with ws mounted as the workspace.
func testConfig(t testing.TB, ws, mode string) docker.Config {
	t.Helper()
	cfg := docker.DefaultConfig()
	cfg.Image = dockertest.Image(t)
	cfg.ContainerNamePrefix = prefix
	cfg.Volumes = []docker.Volume{{Host: ws, Container: "/workspace"}}
	cfg.Memory = 256 << 20
	cfg.KillGrace = 500 * time.Millisecond
	cfg.DefaultTimeout = time.Minute
	cfg.Runtime = dockertest.Runtime()
	if mode == docker.ModeExec {
		cfg.Helper = docker.HelperOff
	} else {
		cfg.HelperBinary = dockertest.HelperBinary(t)
	}
	return cfg
}

func newEnv(t testing.TB, cfg docker.Config) *docker.Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	env, err := docker.New(ctx, cfg)
	if err != nil {
		t.Fatalf("docker.New: %v", err)
	}
	t.Cleanup(func() { _ = env.Close(context.Background()) })
	return env
}

func mustExec(t *testing.T, env backend.Environment, req backend.Request) backend.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := env.Exec(ctx, req)
	if err != nil {
		t.Fatalf("exec %q %q: %v", req.Command, req.Argv, err)
	}
	return res
}

func sh(t *testing.T, env backend.Environment, cmd string) string {
	t.Helper()
	res := mustExec(t, env, backend.Request{Command: cmd})
	if res.ExitCode != 0 {
		t.Fatalf("%q exited %d: %s %s", cmd, res.ExitCode, res.Stdout, res.Stderr)
	}
	return strings.TrimSpace(string(res.Stdout))
}
