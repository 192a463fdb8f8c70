package fileops

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-dev/airlock/pathpolicy"
)

// hostWorld is <tmp>/ws (the workspace) with <tmp>/shared, a directory outside it that a
// root may name, and <tmp>/victim, which no call may reach. shared/evil links to victim.
func hostWorld(t *testing.T) (h hostFiles, base string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"ws/src", "shared/sub", "victim/hooks"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "victim/secret.txt"), []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"shared/evil": "../victim", "ws/evil": "../victim", "shared/sub/up": ".."} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	return hostFiles{dir: filepath.Join(base, "ws")}, base
}

// victimList is everything beneath victim, to show that nothing there changed.
func victimList(t *testing.T, base string) string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(filepath.Join(base, "victim"), func(p string, d os.DirEntry, err error) error {
		names = append(names, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(names, "\n")
}

// TestHostFilesNoLinkOnTheWay checks that the host road refuses a path with a symbolic link
// in any directory component, inside the workspace and in a directory outside it (a root
// configured by absolute path), and never creates a directory through one.
func TestHostFilesNoLinkOnTheWay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		op    string // read, write
		path  string // relative to base
		code  string // "" for success
		where string // for a write that succeeds: the file that must now exist
	}{
		{"read outside through link", "read", "shared/evil/secret.txt", pathpolicy.CodeSymlinkEscape, ""},
		{"write outside through link", "write", "shared/evil/x.txt", pathpolicy.CodeSymlinkEscape, ""},
		{"write outside, new dir through link", "write", "shared/evil/new/x.txt", pathpolicy.CodeSymlinkEscape, ""},
		{"write outside, hooks through link", "write", "shared/evil/hooks/pre-commit", pathpolicy.CodeSymlinkEscape, ""},
		{"write outside, link to parent", "write", "shared/sub/up/x.txt", pathpolicy.CodeSymlinkEscape, ""},
		{"read inside through link", "read", "ws/evil/secret.txt", pathpolicy.CodeSymlinkEscape, ""},
		{"write inside, new dir through link", "write", "ws/evil/new/x.txt", pathpolicy.CodeSymlinkEscape, ""},
		{"write outside, plain", "write", "shared/new/deeper/x.txt", "", "shared/new/deeper/x.txt"},
		{"write inside, plain", "write", "ws/src/a/b/x.txt", "", "ws/src/a/b/x.txt"},
		{"write, parent is a file", "write", "ws/src/a/b/x.txt/y", CodeNotDirectory, ""},
	}
	h, base := hostWorld(t)
	// Sequential: "parent is a file" needs the file "plain" writes.
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := victimList(t, base)
			var err error
			p := filepath.Join(base, tc.path)
			if tc.op == "read" {
				_, err = h.readAll(context.Background(), p, 1<<20)
			} else {
				_, err = h.write(context.Background(), p, []byte("#!/bin/sh\necho pwned\n"), "")
			}
			var fe *fsError
			switch {
			case tc.code == "" && err != nil:
				t.Fatalf("%s %s: %v", tc.op, tc.path, err)
			case tc.code != "" && (!errors.As(err, &fe) || fe.code != tc.code):
				t.Fatalf("%s %s: err = %v, want %s", tc.op, tc.path, err, tc.code)
			}
			if tc.where != "" {
				if _, err := os.Lstat(filepath.Join(base, tc.where)); err != nil {
					t.Errorf("not written: %v", err)
				}
			}
			if after := victimList(t, base); after != before {
				t.Errorf("victim changed:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestHostFilesDeepWriteLinear checks that opening a file's directory costs in proportion
// to its depth: four times as deep must not cost (in allocations, a stand-in for the
// syscalls each level makes) much more than four times as much.
func TestHostFilesDeepWriteLinear(t *testing.T) {
	h, _ := hostWorld(t)
	cost := func(depth int) float64 {
		p := filepath.Join(h.dir, strings.Repeat("d/", depth), "f.txt")
		if _, err := h.write(context.Background(), p, []byte("x"), ""); err != nil {
			t.Fatal(err)
		}
		return testing.AllocsPerRun(5, func() {
			if _, err := h.write(context.Background(), p, []byte("x"), ""); err != nil {
				t.Fatal(err)
			}
		})
	}
	shallow, deep := cost(100), cost(400)
	if ratio := deep / shallow; ratio > 6 {
		t.Errorf("a write 400 levels deep allocates %.0f times, %.1f times what 100 levels do (%.0f): the walk is not linear", deep, ratio, shallow)
	}
}

func BenchmarkHostFilesDeepWrite(b *testing.B) {
	base, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	h := hostFiles{dir: base}
	p := filepath.Join(base, strings.Repeat("d/", 1500), "f.txt")
	for b.Loop() {
		if _, err := h.write(context.Background(), p, []byte("x"), ""); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMapErrPermission: a refusal by file modes on the host is permission_denied, naming the
// user, whatever root would have been allowed.
func TestMapErrPermission(t *testing.T) {
	err := mapErr(&fs.PathError{Op: "open", Path: "x", Err: syscall.EACCES})
	var fe *fsError
	if !errors.As(err, &fe) || fe.code != CodePermissionDenied || !strings.Contains(fe.msg, "uid ") {
		t.Fatalf("mapErr(EACCES) = %v", err)
	}
}
