package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestDiffTrees names each change between two walks of a tree by what it was.
func TestDiffTrees(t *testing.T) {
	t.Parallel()
	file := func(ino uint64, size int64, mtime int64) node {
		return node{typ: "file", mode: 0o644, size: size, nlink: 1, ino: ino, mtime: mtime, ctime: mtime}
	}
	base := map[string]node{
		"/t":   {typ: "dir", mode: 0o755, ino: 1},
		"/t/a": file(2, 10, 100),
		"/t/b": file(3, 10, 100),
		"/t/c": file(4, 10, 100),
		"/t/d": file(5, 10, 100),
		"/t/e": file(6, 10, 100),
	}
	after := map[string]node{
		"/t":   {typ: "dir", mode: 0o755, ino: 1, mtime: 200}, // a directory's own times are not an effect
		"/t/a": func() node { n := file(2, 10, 100); n.mode = 0o600; n.ctime = 200; return n }(),
		"/t/B": file(3, 10, 100), // b renamed
		"/t/c": file(4, 0, 200),  // truncated
		"/t/d": func() node { n := file(5, 10, 100); n.nlink, n.ctime = 2, 200; return n }(),
		"/t/D": func() node { n := file(5, 10, 100); n.nlink, n.ctime = 2, 200; return n }(), // a hard link to d
		"/t/e": func() node { n := file(6, 10, 100); n.ctime = 200; return n }(),             // touch -a, chown
		"/t/l": {typ: "symlink", ino: 7, target: "../x"},
	}
	before := map[string]node{}
	for k, v := range base {
		before[k] = v
	}
	before["/t/gone"] = file(8, 1, 100)
	before["/t/o"] = file(9, 1, 100)
	after["/t/o"] = file(9, 1, 100)
	got := diffTrees(before, after, map[string]bool{"/t/o": true})
	want := []Effect{
		{Path: "/t/B", Kind: "renamed", Type: "file", From: "/t/b"},
		{Path: "/t/D", Kind: "linked", Type: "file", From: "/t/d"},
		{Path: "/t/a", Kind: "mode", Type: "file"},
		{Path: "/t/c", Kind: "modified", Type: "file"},
		{Path: "/t/e", Kind: "metadata", Type: "file"},
		{Path: "/t/gone", Kind: "removed", Type: "file"},
		{Path: "/t/l", Kind: "created", Type: "symlink", Target: "../x"},
		{Path: "/t/o", Kind: "opened_for_writing", Type: "file"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("diffTrees =\n%+v\nwant\n%+v", got, want)
	}
}

// TestWatcher sees a file opened for writing and closed unchanged, which no walk can, and
// nothing for one opened to read.
func TestWatcher(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"w", "r"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("marker\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := snapshot([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	w, err := newWatcher(tree)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.close)
	f, err := os.OpenFile(filepath.Join(dir, "w"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b, err := os.ReadFile(filepath.Join(dir, "r")); err != nil || len(b) == 0 {
		t.Fatal(err)
	}
	opened, err := w.drain()
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{filepath.Join(dir, "w"): true}; !reflect.DeepEqual(opened, want) {
		t.Errorf("drain = %v, want %v", opened, want)
	}
	after, err := snapshot([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if got := diffTrees(tree, after, opened); len(got) != 1 || got[0].Kind != "opened_for_writing" {
		t.Errorf("diffTrees = %+v, want one opened_for_writing", got)
	}
}
