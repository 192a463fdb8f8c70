package docker_test

import (
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/backendtest"
	"github.com/airlock-dev/airlock/backend/docker"
)

func TestConformance(t *testing.T) {
	for _, mode := range []string{docker.ModeHelper, docker.ModeExec} {
		t.Run(mode, func(t *testing.T) {
			backendtest.Run(t, func(t *testing.T) backend.Environment {
				env := newEnv(t, testConfig(t, sharedWorkspace(t), mode))
				if got := env.Describe().Mode; got != mode {
					t.Fatalf("mode = %q, want %q (notes: %q)", got, mode, env.Describe().Notes)
				}
				return env
			})
		})
	}
}
