package backend

import (
	"errors"
	"path"
	"strings"
	"testing"
)

func TestWorkDir(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, ws, dir, want string
		err                 error
	}{
		{"empty is workspace", "/work/app", "", "/work/app", nil},
		{"relative", "/work/app", "src/x", "/work/app/src/x", nil},
		{"dot", "/work/app", ".", "/work/app", nil},
		{"absolute inside", "/work/app", "/work/app/src", "/work/app/src", nil},
		{"inner dotdot", "/work/app", "src/../lib", "/work/app/lib", nil},
		{"escape dotdot", "/work/app", "..", "", ErrOutsideWorkspace},
		{"escape deep", "/work/app", "src/../../x", "", ErrOutsideWorkspace},
		{"similar prefix", "/work/app", "/work/app-copy", "", ErrOutsideWorkspace},
		{"root", "/work/app", "/", "", ErrOutsideWorkspace},
		{"nul", "/work/app", "a\x00b", "", ErrInvalidRequest},
		{"relative workspace", "work", "x", "", ErrInvalidRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := WorkDir(tc.ws, tc.dir)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWithin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		root, p string
		want    bool
	}{
		{"/a", "/a", true},
		{"/a", "/a/b", true},
		{"/a", "/ab", false},
		{"/a/", "/a/b/../c", true},
		{"/", "/anything", true},
		{"/a/b", "/a", false},
	}
	for _, tc := range tests {
		if got := Within(tc.root, tc.p); got != tc.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tc.root, tc.p, got, tc.want)
		}
	}
}

// FuzzWithin holds Within to the plain statement of what it decides.
func FuzzWithin(f *testing.F) {
	for _, s := range [][2]string{{"/a", "/a"}, {"/a", "/ab"}, {"/a/", "/a/b/../c"}, {"/", "/x"}, {"", "."}, {"a", "a/b"}, {".", ".."}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, root, p string) {
		r, q := path.Clean(root), path.Clean(p)
		want := strings.HasPrefix(q, "/")
		if r != "/" {
			want = q == r || strings.HasPrefix(q, r+"/")
		}
		if got := Within(root, p); got != want {
			t.Fatalf("Within(%q, %q) = %v, want %v", root, p, got, want)
		}
	})
}
