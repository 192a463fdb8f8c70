//go:build linux

package sandbox

import (
	"os"
	"testing"
)

// RequireLandlock skips where the kernel cannot deliver the sandbox, unless
// AIRLOCK_REQUIRE_LANDLOCK=1 turns that into a failure (CI sets it). The package's own tests
// and its external ones both call it.
func RequireLandlock(t *testing.T) {
	t.Helper()
	if abi := KernelABI(); abi < RequiredABI {
		if os.Getenv("AIRLOCK_REQUIRE_LANDLOCK") == "1" {
			t.Fatalf("Landlock ABI %d, need %d", abi, RequiredABI)
		}
		t.Skipf("Landlock ABI %d, need %d", abi, RequiredABI)
	}
}

// SetAfterPut sets the hook s's workers run between listing themselves idle and going back
// to their channel. Call it before anything is run in s.
func (s *Sandbox) SetAfterPut(f func()) { s.afterPut = f }

// Spawned is how many workers the current generation made.
func (s *Sandbox) Spawned() int {
	s.mu.Lock()
	g := s.gen
	s.mu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.spawned
}
