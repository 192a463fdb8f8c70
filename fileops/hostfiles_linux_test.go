package fileops

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHostFilesIntermediateSwap swaps a directory on the way to the file with a symbolic
// link to .git, atomically and without pause (renameat2 RENAME_EXCHANGE), while writes run:
// no write may land in .git/hooks. It is the reviewer's reproduction of a race between the
// check of each component and the open of the whole path.
func TestHostFilesIntermediateSwap(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(ws, "src/a/b/hooks"), 0o755))
	must(os.MkdirAll(filepath.Join(ws, ".git/hooks"), 0o755))
	b, breal := filepath.Join(ws, "src/a/b"), filepath.Join(ws, "src/a/b.real")
	must(os.Symlink("../../.git", breal))
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			_ = unix.Renameat2(unix.AT_FDCWD, b, unix.AT_FDCWD, breal, unix.RENAME_EXCHANGE)
		}
	}()
	t.Cleanup(func() { stop.Store(true); <-done })
	h := hostFiles{dir: ws}
	target := filepath.Join(ws, "src/a/b/hooks/pre-commit")
	hook := filepath.Join(ws, ".git/hooks/pre-commit")
	written := 0
	for i := 0; i < 2000; i++ {
		if _, err := h.write(context.Background(), target, []byte("#!/bin/sh\necho pwned\n"), ""); err == nil {
			written++
		}
		if _, err := os.Lstat(hook); err == nil {
			t.Fatalf("a write landed in .git/hooks after %d attempts", i+1)
		}
	}
	t.Logf("%d of 2000 writes went through, none into .git", written)
}
