package main

import (
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
