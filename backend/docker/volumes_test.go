package docker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
)

// The reviewer's configuration: the workspace writable and a directory inside it mounted
// read-only elsewhere. A command could swap the inner directory for a symlink to /etc and stop
// the container (PID 1 runs as the command user); Docker would follow the symlink on the host
// when the container started again. Such a configuration is refused before anything runs.
func TestNestedVolumeRefused(t *testing.T) {
	outer := dockertest.Workspace(t)
	inner := filepath.Join(outer, "inner")
	if err := os.Mkdir(inner, 0o777); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, outer, docker.ModeExec)
	cfg.ReuseContainer = false
	cfg.Volumes = append(cfg.Volumes, docker.Volume{Host: inner, Container: "/inner", ReadOnly: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env, err := docker.New(ctx, cfg)
	if err == nil {
		_ = env.Close(ctx)
		t.Fatal("a volume inside a writable volume was accepted")
	}
	for _, want := range []string{"environment.docker.volumes[1].host: refused", inner, "volumes[0].host (" + outer + ")", "mounted writable"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// A volume's host directory replaced with a symlink while the container is stopped is not
// followed when the container is started again: the call fails, naming the volume and what
// it now resolves to, and no container mounts the new target. Once the directory is back,
// the environment works again.
func TestVolumeSwappedWhileStoppedNotFollowed(t *testing.T) {
	cli := dockertest.Client(t)
	for _, tc := range []struct {
		name   string
		target func(t *testing.T) string
	}{
		{"to etc", func(*testing.T) string { return "/etc" }},
		{"to another directory", func(t *testing.T) string { return dockertest.Workspace(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := dockertest.Workspace(t)
			data := filepath.Join(parent, "data")
			if err := os.Mkdir(data, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(data, "marker"), []byte("original\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := testConfig(t, dockertest.Workspace(t), docker.ModeExec)
			cfg.ReuseContainer = false
			cfg.Volumes = append(cfg.Volumes, docker.Volume{Host: data, Container: "/data", ReadOnly: true})
			env := newEnv(t, cfg)
			if got := sh(t, env, "cat /data/marker"); got != "original" {
				t.Fatalf("before: %q", got)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			id := env.ContainerID()
			if err := cli.ContainerKill(ctx, id, "KILL"); err != nil {
				t.Fatal(err)
			}
			waitStopped(t, id)
			target := tc.target(t)
			if err := os.Rename(data, data+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, data); err != nil {
				t.Fatal(err)
			}

			res, err := env.Exec(ctx, backend.Request{Command: "ls /data; cat /data/passwd"})
			if err == nil {
				t.Fatalf("the container started again with /data swapped for a symlink to %s: exit %d, stdout %q, notes %q",
					target, res.ExitCode, res.Stdout, res.Notes)
			}
			for _, want := range []string{"refusing to start the container", "volume " + data, target} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q: %v", want, err)
				}
			}
			info, ierr := cli.ContainerInspect(ctx, id)
			if ierr == nil && info.State != nil && info.State.Running {
				t.Errorf("the container runs again")
			}
			if ierr == nil {
				for _, m := range info.Mounts {
					if m.Source == target {
						t.Errorf("the container mounts %s: %+v", target, m)
					}
				}
			}

			// Put the directory back: the next call brings the environment back.
			if err := os.Remove(data); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(data+".old", data); err != nil {
				t.Fatal(err)
			}
			res = mustExec(t, env, backend.Request{Command: "cat /data/marker"})
			if string(res.Stdout) != "original\n" || !hasNote(res, "environment recreated") {
				t.Errorf("after the directory came back: stdout %q stderr %q notes %q", res.Stdout, res.Stderr, res.Notes)
			}
		})
	}
}
