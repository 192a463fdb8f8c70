package ssh_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/backendtest"
	"github.com/airlock-dev/airlock/backend/helper/helpertest"
	"github.com/airlock-dev/airlock/backend/ssh"
	"github.com/airlock-dev/airlock/backend/ssh/sshtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	sshtest.CleanupBinaries()
	helpertest.Remove()
	os.Exit(code)
}

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

func TestConformanceAgent(t *testing.T) {
	srv := sshtest.Start(t)
	cfg := srv.Config
	cfg.Mode = ssh.ModeAuto
	cfg.AgentBinary = sshtest.AirlockBinary(t)
	backendtest.Run(t, func(t *testing.T) backend.Environment {
		env := newEnv(t, cfg)
		if d := env.Describe(); d.Mode != ssh.ModeAgent || !d.Capabilities.ResidentHelper {
			t.Fatalf("mode = %q (notes %q), want agent", d.Mode, d.Notes)
		}
		return env
	})
}
