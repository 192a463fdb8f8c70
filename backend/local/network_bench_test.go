package local

import (
	"context"
	"testing"

	"github.com/airlock-dev/airlock/backend"
)

// BenchmarkExecNetwork sets the cost of a fresh network namespace per command beside the
// same command on the host's network.
func BenchmarkExecNetwork(b *testing.B) {
	for _, network := range []string{NetworkHost, NetworkNone} {
		b.Run(network, func(b *testing.B) {
			e, err := New(Config{Workspace: b.TempDir(), Network: network})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close(context.Background())
			for i := 0; i < b.N; i++ {
				if _, err := e.Exec(context.Background(), backend.Request{Argv: []string{"/bin/true"}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkExecCallTracking sets what a call pays for having its proxy refusals named
// (its command tracked in the sockowner table while it runs) beside the same command
// untracked, in the same run.
func BenchmarkExecCallTracking(b *testing.B) {
	for _, tracked := range []bool{false, true} {
		name := "untracked"
		if tracked {
			name = "tracked"
		}
		b.Run(name, func(b *testing.B) {
			cfg := Config{Workspace: b.TempDir()}
			if tracked {
				cfg.Attribute = func(backend.ConnOwner) {}
			}
			e, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close(context.Background())
			ctx := backend.WithCall(context.Background(), "call-bench")
			for i := 0; i < b.N; i++ {
				if _, err := e.Exec(ctx, backend.Request{Argv: []string{"/bin/true"}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
