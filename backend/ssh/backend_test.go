package ssh_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/backendtest"
	"github.com/airlock-dev/airlock/backend/ssh"
	"github.com/airlock-dev/airlock/backend/ssh/sshtest"
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/internal/buildtest"
)

func TestMain(m *testing.M) { buildtest.Run(m) }

func newEnv(t *testing.T, cfg ssh.Config) *ssh.Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	env, err := ssh.New(ctx, cfg)
	if env != nil {
		t.Cleanup(func() { _ = env.Close(context.Background()) })
	}
	if err != nil {
		t.Fatalf("ssh.New: %v", err)
	}
	return env
}

func TestConformanceSession(t *testing.T) {
	srv := sshtest.Start(t)
	backendtest.Run(t, func(t *testing.T) backend.Environment {
		env := newEnv(t, srv.Config)
		if m := env.Describe().Mode; m != ssh.ModeSession {
			t.Fatalf("mode = %q, want session", m)
		}
		return env
	})
}

func TestConformanceHelper(t *testing.T) {
	srv := sshtest.Start(t)
	cfg := srv.Config
	cfg.Mode = ssh.ModeAuto
	cfg.HelperBinary = sshtest.AirlockBinary(t)
	backendtest.Run(t, func(t *testing.T) backend.Environment {
		env := newEnv(t, cfg)
		if d := env.Describe(); d.Mode != ssh.ModeHelper || !d.Capabilities.ResidentHelper {
			t.Fatalf("mode = %q (notes %q), want helper", d.Mode, d.Notes)
		}
		return env
	})
}

// TestOldHelperBinaryKeyIsNoted: a file's agent_binary, helper_binary's former name, still
// gives the helper, and Describe (what doctor shows) says the name is deprecated. That a
// file giving both names is refused, with both named, is the config's to say (configs'
// TestHelperKeysAndTheirOldNames).
func TestOldHelperBinaryKeyIsNoted(t *testing.T) {
	srv := sshtest.Start(t)
	bin := sshtest.AirlockBinary(t)
	file, err := configs.Parse([]byte(fmt.Sprintf("[environment]\ntype = \"ssh\"\n[environment.ssh]\nagent_binary = %q\n", bin)), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The test server, with what the file says of the helper and the notes on it.
	read := file.Environment.Section("ssh").(*ssh.Config)
	cfg := srv.Config
	cfg.Mode = ssh.ModeAuto
	cfg.HelperBinary, cfg.OldKeys = read.HelperBinary, read.OldKeys
	env := newEnv(t, cfg)
	d := env.Describe()
	if cfg.HelperBinary != bin || d.Mode != ssh.ModeHelper || !hasString(d.Notes, "environment.ssh.agent_binary is deprecated: call it helper_binary") {
		t.Errorf("helper binary %q, mode %q, notes %q: want %s, the helper, and a note on the old name", cfg.HelperBinary, d.Mode, d.Notes, bin)
	}
}
