package docker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
)

// callBound is how long one call may take while the daemon is down or just back. A call that
// runs into it has hung.
const callBound = 60 * time.Second

// TestDaemonRestartMidSession restarts the daemon under a live Env: a call while the daemon
// is down gets a clear error at once, and the first call after it is back gets a working
// container with a note that the environment was recreated. It runs against a private
// dockerd, since restarting the shared one would break the tests running beside it.
func TestDaemonRestartMidSession(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and restarts a private dockerd")
	}
	d := dockertest.StartDaemon(t)
	img := d.Image(t)
	// The subtests restart the one daemon, so they run one after another.
	tests := []struct {
		name string
		mode string
		// callWhileDown makes a call between stop and start, which must fail promptly.
		callWhileDown bool
	}{
		{"helper_down", docker.ModeHelper, true},
		{"helper_quiet", docker.ModeHelper, false},
		{"exec_down", docker.ModeExec, true},
		{"exec_quiet", docker.ModeExec, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mode := tc.mode
			cfg := docker.DefaultConfig()
			cfg.Host = d.Host
			cfg.Image = img
			cfg.ContainerNamePrefix = prefix
			cfg.Volumes = []docker.Volume{{Host: dockertest.Workspace(t), Container: "/workspace"}}
			cfg.Memory = 256 << 20
			cfg.KillGrace = 500 * time.Millisecond
			if mode == docker.ModeExec {
				cfg.Helper = docker.HelperOff
			} else {
				cfg.HelperBinary = dockertest.HelperBinary(t)
			}
			env := newEnv(t, cfg)
			if got := sh(t, env, "echo kept > /workspace/mark && echo before"); got != "before" {
				t.Fatalf("before the restart: %q", got)
			}
			if got := env.Describe().Mode; got != mode {
				t.Fatalf("mode = %q, want %q (notes %q)", got, mode, env.Describe().Notes)
			}

			d.Stop(t)
			if tc.callWhileDown {
				res, elapsed, err := execBounded(env, "echo down")
				t.Logf("call while the daemon is down: %v after %s", err, elapsed.Round(time.Millisecond))
				switch {
				case err == nil:
					t.Fatalf("call while the daemon is down succeeded: %q %q", res.Stdout, res.Notes)
				case errors.Is(err, context.DeadlineExceeded) || elapsed >= callBound:
					t.Fatalf("call while the daemon is down hung until its deadline: %v", err)
				case !errors.Is(err, backend.ErrUnavailable):
					t.Errorf("error while the daemon is down does not wrap backend.ErrUnavailable: %v", err)
				case !strings.Contains(err.Error(), d.Host) || !strings.Contains(err.Error(), "unreachable"):
					t.Errorf("error while the daemon is down does not name the daemon %s as unreachable: %v", d.Host, err)
				}
			}

			d.Start(t)
			res, elapsed, err := execBounded(env, "cat /workspace/mark && echo after")
			t.Logf("first call after the restart: %s, notes %q", elapsed.Round(time.Millisecond), res.Notes)
			if err != nil {
				t.Fatalf("first call after the daemon came back: %v", err)
			}
			if res.ExitCode != 0 || string(res.Stdout) != "kept\nafter\n" {
				t.Errorf("first call after the restart: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
			}
			if !hasNote(res, "environment recreated") {
				t.Errorf("first call after the restart does not say the environment was recreated: notes %q", res.Notes)
			}
			if got := env.Describe().Mode; got != mode {
				t.Errorf("mode after the restart = %q, want %q (notes %q)", got, mode, env.Describe().Notes)
			}
			if res := mustExec(t, env, backend.Request{Command: "true"}); len(res.Notes) != 0 {
				t.Errorf("notes repeated on the next call: %q", res.Notes)
			}
		})
	}
}

// execBounded runs command with callBound as its deadline and reports how long it took.
func execBounded(env *docker.Env, command string) (backend.Result, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callBound)
	defer cancel()
	start := time.Now()
	res, err := env.Exec(ctx, backend.Request{Command: command})
	return res, time.Since(start), err
}
