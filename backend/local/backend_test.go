package local_test

import (
	"context"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/backendtest"
	"github.com/airlock-dev/airlock/backend/local"
)

func newEnv(t *testing.T) backend.Environment {
	t.Helper()
	env, err := local.New(local.Config{Workspace: t.TempDir()})
	if err != nil {
		t.Fatalf("local.New: %v", err)
	}
	t.Cleanup(func() { _ = env.Close(context.Background()) })
	return env
}

func TestConformance(t *testing.T) {
	backendtest.Run(t, newEnv)
}
