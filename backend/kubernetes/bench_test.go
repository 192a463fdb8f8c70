package kubernetes_test

import (
	"context"
	"testing"

	"github.com/airlock-dev/airlock/backend"
)

// BenchmarkExec times one command through the resident helper's open stream (helper) and
// with one exec of its own through the API server (raw exec), in the same pod and run.
func BenchmarkExec(b *testing.B) {
	env := newEnv(b, testConfig(b))
	ctx := context.Background()
	b.Run("helper", func(b *testing.B) {
		for b.Loop() {
			res, err := env.Exec(ctx, backend.Request{Argv: []string{"true"}})
			if err != nil || res.ExitCode != 0 {
				b.Fatal(err, res.ExitCode)
			}
		}
	})
	b.Run("raw-exec", func(b *testing.B) {
		for b.Loop() {
			res, err := env.RawExec(ctx, []string{"true"})
			if err != nil || res.ExitCode != 0 {
				b.Fatal(err, res.ExitCode)
			}
		}
	})
}
