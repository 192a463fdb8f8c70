//go:build linux

package sandbox_test

import (
	"os/exec"
	"testing"

	"github.com/airlock-dev/airlock/backend/sandbox"
)

// BenchmarkDo is what putting a thread under the sandbox costs; BenchmarkExecTrue compares
// a fork/exec of /bin/true with and without it, in the same run.
func BenchmarkDo(b *testing.B) {
	requireLandlockB(b)
	sb, err := sandbox.New(sandbox.ModeLandlock, sandbox.Policy{WriteRoots: []string{b.TempDir()}})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	for i := 0; i < b.N; i++ {
		if err := sb.Do(func() error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExecTrue(b *testing.B) {
	requireLandlockB(b)
	sb, err := sandbox.New(sandbox.ModeLandlock, sandbox.Policy{WriteRoots: []string{b.TempDir()}})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	b.Run("raw", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sandboxed", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := sb.Do(func() error { return exec.Command("/bin/true").Run() }); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func requireLandlockB(b *testing.B) {
	if sandbox.KernelABI() < sandbox.RequiredABI {
		b.Skip("no Landlock")
	}
}
