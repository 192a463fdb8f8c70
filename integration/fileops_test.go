package integration

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
	"github.com/airlock-dev/airlock/backend/ssh"
	"github.com/airlock-dev/airlock/backend/ssh/sshtest"
	"github.com/airlock-dev/airlock/fileops/fileopstest"
)

// The file-tool conformance suite against the real remote backends, in each of their modes:
// every path-escape case is resolved inside the container or on the remote host.

func TestFileToolsDocker(t *testing.T) {
	dockertest.Client(t) // skips, or fails under AIRLOCK_REQUIRE_DOCKER, without a daemon
	image := dockertest.Image(t)
	ws := t.TempDir()
	if err := os.Chmod(ws, 0o777); err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("airlock_itfo_%d_", os.Getpid())
	t.Cleanup(func() { dockertest.RemoveContainers(prefix) })
	for _, mode := range []string{docker.ModeHelper, docker.ModeExec} {
		t.Run(mode, func(t *testing.T) {
			cfg := docker.DefaultConfig()
			cfg.Image = image
			cfg.ContainerNamePrefix = prefix
			cfg.Volumes = []docker.Volume{{Host: ws, Container: "/workspace"}}
			cfg.DefaultTimeout = time.Minute
			cfg.HelperBinary = airlockBin
			cfg.Runtime = dockertest.Runtime()
			if mode == docker.ModeExec {
				cfg.Helper = docker.HelperOff
			}
			fileopstest.Run(t, func(t *testing.T) backend.Environment {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				env, err := docker.New(ctx, cfg)
				if err != nil {
					t.Fatalf("docker.New: %v", err)
				}
				t.Cleanup(func() { _ = env.Close(context.Background()) })
				if env.Describe().Mode != mode {
					t.Fatalf("mode %q, want %q: %v", env.Describe().Mode, mode, env.Describe().Notes)
				}
				return env
			})
		})
	}
}

func TestFileToolsSSH(t *testing.T) {
	srv := sshtest.Start(t)
	for _, mode := range []string{ssh.ModeSession, ssh.ModeHelper} {
		t.Run(mode, func(t *testing.T) {
			cfg := srv.Config
			if mode == ssh.ModeHelper {
				cfg.Mode, cfg.HelperBinary = ssh.ModeAuto, airlockBin
			}
			fileopstest.Run(t, func(t *testing.T) backend.Environment {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				env, err := ssh.New(ctx, cfg)
				if env != nil {
					t.Cleanup(func() { _ = env.Close(context.Background()) })
				}
				if err != nil {
					t.Fatalf("ssh.New: %v", err)
				}
				if env.Describe().Mode != mode {
					t.Fatalf("mode %q, want %q: %v", env.Describe().Mode, mode, env.Describe().Notes)
				}
				return env
			})
		})
	}
}
