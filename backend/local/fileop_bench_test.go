package local_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/backend/sandbox"
)

// BenchmarkFileRead times one read by descriptor in the helper (what read_file does once
// policy allowed the path).
func BenchmarkFileRead(b *testing.B) {
	ws := b.TempDir()
	p := filepath.Join(ws, "f.txt")
	if err := os.WriteFile(p, []byte("line one\nline two\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	env, err := local.New(local.Config{Workspace: ws, Sandbox: local.SandboxConfig{Mode: sandbox.ModeAuto}})
	if err != nil {
		b.Fatal(err)
	}
	defer env.Close(context.Background())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := env.FileOp(context.Background(), backend.FileRequest{Op: backend.FileRead, Path: p, Root: ws, MaxBytes: 1 << 20}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSessionStart times a session's helper from nothing to its hello, and its end.
func BenchmarkSessionStart(b *testing.B) {
	for _, mode := range []sandbox.Mode{sandbox.ModeNamespaces, sandbox.ModeLandlock} {
		b.Run(string(mode), func(b *testing.B) {
			ws := b.TempDir()
			for i := 0; i < b.N; i++ {
				env, err := local.New(local.Config{Workspace: ws, Sandbox: local.SandboxConfig{Mode: mode}})
				if err != nil {
					b.Skip(err)
				}
				b.StopTimer()
				_ = env.Close(context.Background())
				b.StartTimer()
			}
		})
	}
}
