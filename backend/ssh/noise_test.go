package ssh_test

import (
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/ssh"
	"github.com/airlock-dev/airlock/backend/ssh/sshtest"
)

// TestNoisyDotfiles checks that what the remote user's .bashrc prints never reaches a
// result, and that it does not keep the resident helper from starting.
func TestNoisyDotfiles(t *testing.T) {
	srv := sshtest.Start(t, sshtest.WithNoisyDotfiles())
	modes(t, srv, func(t *testing.T, cfg ssh.Config) {
		env := newEnv(t, cfg)
		if cfg.Mode == ssh.ModeAuto && env.Describe().Mode != ssh.ModeHelper {
			t.Fatalf("helper not started: %q", env.Describe().Notes)
		}
		res := mustExec(t, env, backend.Request{Command: "echo out; echo err >&2"})
		if string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
			t.Errorf("dotfile noise reached the result: %q / %q", res.Stdout, res.Stderr)
		}
	})
	// The noise really is there for anything that does not skip it.
	cfg := srv.Config
	cfg.LoginShell = true
	env := newEnv(t, cfg)
	res := mustExec(t, env, backend.Request{Command: "echo $0"})
	if string(res.Stdout) != "/bin/bash\n" && string(res.Stdout) != "bash\n" {
		t.Errorf("login shell: $0 = %q", res.Stdout)
	}
}
