package concurrency

import (
	"path"
	"slices"
	"strings"
	"testing"
)

// overlapByComponents is a slower, plainer statement of Overlap for absolute paths: split both
// into components and ask whether one list is a prefix of the other.
func overlapByComponents(p, q string) bool {
	split := func(s string) []string {
		var parts []string
		for part := range strings.SplitSeq(path.Clean(s), "/") {
			if part != "" {
				parts = append(parts, part)
			}
		}
		return parts
	}
	a, b := split(p), split(q)
	if len(a) > len(b) {
		a, b = b, a
	}
	return slices.Equal(a, b[:len(a)])
}

func FuzzOverlap(f *testing.F) {
	for _, seed := range [][2]string{
		{"/a/b", "/a/bc"}, {"/w/a/", "/w/a"}, {"/w/a/../b", "/w/b/x"}, {"/", "/x"},
		{"/../a", "/a/b"}, {"a", "/a"}, {"", "/"}, {"//a//b/", "/a/b/c"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, p, q string) {
		got := Overlap(p, q)
		if got != Overlap(q, p) {
			t.Fatalf("Overlap(%q, %q) is not symmetric", p, q)
		}
		if !path.IsAbs(path.Clean(p)) || !path.IsAbs(path.Clean(q)) {
			if !got {
				t.Fatalf("Overlap(%q, %q) = false for a relative path", p, q)
			}
			return
		}
		if want := overlapByComponents(p, q); got != want {
			t.Fatalf("Overlap(%q, %q) = %v, components say %v", p, q, got, want)
		}
	})
}
