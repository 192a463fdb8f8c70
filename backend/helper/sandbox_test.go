package helper

import (
	"os"
	"path/filepath"
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

// TestWorkingDir: the workspace's top is taken as it is (a stat, no resolving), and must be
// a directory; a directory below it is resolved, and one that resolves outside it (through a
// link) is refused as outside.
func TestWorkingDir(t *testing.T) {
	base := t.TempDir()
	ws, out := filepath.Join(base, "ws"), filepath.Join(base, "out")
	for _, d := range []string{filepath.Join(ws, "sub"), out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(out, filepath.Join(ws, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	realWS, _ := filepath.EvalSymlinks(ws)
	for _, c := range []struct {
		dir, want, kind string
	}{
		{ws, ws, ""},
		{filepath.Join(ws, "sub"), filepath.Join(realWS, "sub"), ""},
		{filepath.Join(ws, "escape"), "", kindOutside},
		{filepath.Join(ws, "missing"), "", kindInvalid},
		{filepath.Join(ws, "file"), filepath.Join(realWS, "file"), ""}, // chdir says it at the start
	} {
		got, kind, err := workingDir(c.dir, ws)
		if got != c.want || kind != c.kind || (err != nil) != (c.kind != "") {
			t.Errorf("workingDir(%s) = %q, %q, %v; want %q, %q", c.dir, got, kind, err, c.want, c.kind)
		}
	}
	if _, kind, err := workingDir(filepath.Join(ws, "missing"), filepath.Join(ws, "missing")); kind != kindInvalid || err == nil {
		t.Errorf("a missing workspace top: %q %v, want %q", kind, err, kindInvalid)
	}
}
