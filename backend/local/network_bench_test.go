package local

import (
	"context"
	"os/exec"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/sandbox"
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

// BenchmarkRulesetPerCall is the alternative tracking avoids: a proxy port per call would
// need a Landlock ruleset naming that port, so a sandbox planned and its threads restricted
// for every call. Timed beside BenchmarkExecCallTracking's commands (same /bin/true).
func BenchmarkRulesetPerCall(b *testing.B) {
	if sandbox.KernelABI() < sandbox.RequiredABI {
		b.Skip("no Landlock")
	}
	ws := b.TempDir()
	tmp := b.TempDir()
	for i := 0; i < b.N; i++ {
		sb, err := sandbox.New(sandbox.ModeLandlock, sandbox.Policy{ReadRoots: []string{ws}, WriteRoots: []string{ws}, TempDir: tmp,
			Network: sandbox.Network{ConnectTCP: []uint16{uint16(20000 + i%20000)}}})
		if err != nil {
			b.Fatal(err)
		}
		if err := sb.Do(func() error { return exec.Command("/bin/true").Run() }); err != nil {
			b.Fatal(err)
		}
		sb.Close()
	}
}
