package agent

import (
	"slices"
	"testing"

	"github.com/airlock-dev/airlock/backend/sandbox"
)

// TestScratchEnvMadeOncePerEnvironment: the environment a command gets is ScratchEnv's, made
// once for the kept environment that SameEnv starts share, and made anew for any other slice,
// even one equal to it (its contents could change under the memo).
func TestScratchEnvMadeOncePerEnvironment(t *testing.T) {
	s := &server{opts: ServeOptions{TempDir: "/tmp/session"}}
	kept := slices.Clip([]string{"PATH=/usr/bin", "TMPDIR=/elsewhere", "HOME=/home/u"})
	want := sandbox.ScratchEnv(kept, "/tmp/session", false)
	first := s.scratchEnv(kept)
	if !slices.Equal(first, want) {
		t.Fatalf("scratchEnv = %q, want %q", first, want)
	}
	if again := s.scratchEnv(kept); !sameSlice(again, first) {
		t.Error("the kept environment's scratch environment was made again")
	}
	if cap(first) != len(first) {
		t.Error("the shared scratch environment is not clipped: an append would write into it")
	}
	other := slices.Clone(kept)
	other[0] = "PATH=/opt/bin"
	got := s.scratchEnv(other)
	if sameSlice(got, first) || got[0] != "PATH=/opt/bin" {
		t.Errorf("another environment got the kept one's scratch environment: %q", got)
	}
	if back := s.scratchEnv(kept); !slices.Equal(back, want) {
		t.Errorf("the kept environment again: %q, want %q", back, want)
	}
}
