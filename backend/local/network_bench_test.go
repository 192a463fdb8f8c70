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
