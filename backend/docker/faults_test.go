package docker_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
)

func errors_Is(err, target error) bool { return errors.Is(err, target) }

// waitStopped waits until the container is gone or not running.
func waitStopped(t *testing.T, id string) {
	t.Helper()
	cli := dockertest.Client(t)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		info, err := cli.ContainerInspect(context.Background(), id)
		if err != nil || !info.State.Running {
			time.Sleep(300 * time.Millisecond) // let the attached stream notice
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("container %s still running", id)
}

func hasNote(res backend.Result, s string) bool {
	for _, n := range res.Notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

func TestRecoversFromOutsideDamage(t *testing.T) {
	cli := dockertest.Client(t)
	damage := map[string]func(ctx context.Context, id string) error{
		"killed": func(ctx context.Context, id string) error { return cli.ContainerKill(ctx, id, "KILL") },
		"removed": func(ctx context.Context, id string) error {
			return cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true})
		},
	}
	for _, mode := range []string{docker.ModeHelper, docker.ModeExec} {
		for name, hurt := range damage {
			t.Run(mode+"/"+name, func(t *testing.T) {
				cfg := testConfig(t, dockertest.Workspace(t), mode)
				cfg.ReuseContainer = false
				env := newEnv(t, cfg)
				sh(t, env, "true")
				old := env.ContainerID()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := hurt(ctx, old); err != nil {
					t.Fatal(err)
				}
				waitStopped(t, old)
				res := mustExec(t, env, backend.Request{Command: "echo back"})
				if string(res.Stdout) != "back\n" || !hasNote(res, "environment recreated") {
					t.Errorf("after the container was %s: %q notes %q", name, res.Stdout, res.Notes)
				}
				if got := env.Describe().Mode; got != mode {
					t.Errorf("mode after recovery = %q (notes %q)", got, env.Describe().Notes)
				}
				if res := mustExec(t, env, backend.Request{Command: "true"}); len(res.Notes) != 0 {
					t.Errorf("notes repeated: %q", res.Notes)
				}
			})
		}
	}
}

func TestHelperRestartedOnceThenFallsBack(t *testing.T) {
	cfg := testConfig(t, dockertest.Workspace(t), docker.ModeHelper)
	cfg.ReuseContainer = false
	env := newEnv(t, cfg)
	killHelper := func() {
		t.Helper()
		out, err := exec.Command("docker", "exec", env.ContainerID(), "sh", "-c",
			`for p in /proc/[0-9]*; do case "$(tr '\0' ' ' < $p/cmdline 2>/dev/null)" in /.airlock/helper-*) kill -KILL ${p#/proc/};; esac; done`).CombinedOutput()
		if err != nil {
			t.Fatalf("kill helper: %v %s", err, out)
		}
		time.Sleep(300 * time.Millisecond)
	}
	killHelper()
	res := mustExec(t, env, backend.Request{Command: "echo one"})
	if string(res.Stdout) != "one\n" || !hasNote(res, "restarted the resident helper") || env.Describe().Mode != docker.ModeHelper {
		t.Errorf("first death: %q %q mode %s", res.Stdout, res.Notes, env.Describe().Mode)
	}
	killHelper()
	res = mustExec(t, env, backend.Request{Command: "echo two"})
	if string(res.Stdout) != "two\n" || env.Describe().Mode != docker.ModeExec || !hasNote(res, "stopped twice") {
		t.Errorf("second death: %q %q mode %s", res.Stdout, res.Notes, env.Describe().Mode)
	}
}

// A binary that is no helper (here the host's dynamically linked ls, shipped with its
// loader and libraries like any dynamic binary) does not answer the helper's hello: the
// backend falls back to one exec per command and says why, with what the binary printed.
func TestNonHelperBinaryFallsBackToExec(t *testing.T) {
	cfg := testConfig(t, sharedWorkspace(t), docker.ModeHelper)
	dyn, err := exec.LookPath("ls")
	if err != nil {
		t.Skip(err)
	}
	cfg.HelperBinary = dyn
	env := newEnv(t, cfg)
	d := env.Describe()
	notes := strings.Join(d.Notes, " ")
	if d.Mode != docker.ModeExec || d.Capabilities.ResidentHelper || !strings.Contains(notes, "helper did not start") || !strings.Contains(notes, "/.airlock/helper-") {
		t.Errorf("describe: mode %q notes %q", d.Mode, d.Notes)
	}
	first := mustExec(t, env, backend.Request{Command: "echo ok"})
	if string(first.Stdout) != "ok\n" || !hasNote(first, "helper did not start") {
		t.Errorf("first result after the fallback: %q, notes %q", first.Stdout, first.Notes)
	}
	if got := sh(t, env, "echo ok"); got != "ok" {
		t.Errorf("exec mode: %q", got)
	}
}

func TestClearErrors(t *testing.T) {
	cfg := testConfig(t, sharedWorkspace(t), docker.ModeExec)
	cfg.Image = "airlock-test/does-not-exist:latest"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := docker.New(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), `image "airlock-test/does-not-exist:latest" not found`) || !strings.Contains(err.Error(), "docker import") {
		t.Errorf("missing image: %v", err)
	}

	cfg = testConfig(t, sharedWorkspace(t), docker.ModeExec)
	cfg.Host = "unix:///nonexistent/airlock-docker.sock"
	start := time.Now()
	_, err = docker.New(ctx, cfg)
	if !errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), "unreachable") || time.Since(start) > 10*time.Second {
		t.Errorf("unreachable daemon: %v after %v", err, time.Since(start))
	}
}

// In exec mode the wrapper's sweep reads /proc in name order, so when the watchdog's pid has
// fewer digits than its sleep's (999 and 1000) the sleep is killed first. A watchdog that
// went on after its sleep died sent TERM to the group and a command that had succeeded
// exited 143 (seen under load in TestNonHelperBinaryFallsBackToExec). Each subtest places
// the wrapper's pid a little below 1000 (the exec itself takes a few pids before the
// watchdog starts) in a container of its own and needs a clean exit.
func TestExecWatchdogSweepOrder(t *testing.T) {
	for _, target := range []int{984, 986, 988, 989, 990, 991, 992} {
		t.Run(strconv.Itoa(target), func(t *testing.T) {
			cfg := testConfig(t, sharedWorkspace(t), docker.ModeExec)
			cfg.ReuseContainer = false
			env := newEnv(t, cfg)
			// Use up pids until the next one is target: the next exec's wrapper gets it.
			burn := fmt.Sprintf(`p=$(sh -c 'echo $$'); while [ "$p" -lt %d ]; do p=$(sh -c 'echo $$'); done; echo "$p"`, target-1)
			t.Logf("last pid before the wrapper: %s", sh(t, env, burn))
			// The command leaves processes behind (the sweep kills them), so the sweep has
			// work between the watchdog's sleep and the watchdog itself.
			if got := sh(t, env, "i=0; while [ $i -lt 40 ]; do sleep 60 & i=$((i+1)); done; echo ok"); got != "ok" {
				t.Errorf("exec mode: %q", got)
			}
		})
	}
}
