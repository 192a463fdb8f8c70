package docker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend/docker"
)

// The runtime is checked against the real daemon when the environment opens: an unknown one
// is refused naming the field, before any container exists; the one in force is described.
func TestRuntimeCheckedAtOpen(t *testing.T) {
	cfg := testConfig(t, sharedWorkspace(t), docker.ModeExec)
	cfg.Runtime = "airlock-no-such-runtime"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env, err := docker.New(ctx, cfg)
	if err == nil {
		_ = env.Close(context.Background())
		t.Fatal("docker.New accepted a runtime the daemon does not know")
	}
	if !strings.Contains(err.Error(), `environment.docker.runtime = "airlock-no-such-runtime"`) {
		t.Fatalf("refusal does not name the field: %v", err)
	}

	env = newEnv(t, testConfig(t, sharedWorkspace(t), docker.ModeExec))
	want := "runtime: "
	if rt := testConfig(t, sharedWorkspace(t), docker.ModeExec).Runtime; rt != "" {
		want += rt
	}
	for _, n := range env.Describe().Notes {
		if strings.HasPrefix(n, want) {
			return
		}
	}
	t.Fatalf("Describe does not name the runtime in force (%q): %q", want, env.Describe().Notes)
}
