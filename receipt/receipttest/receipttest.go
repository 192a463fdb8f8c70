// Package receipttest holds what tests of receipts share: a small filesystem of its own to
// fill, for the tests that show a full disk loses no receipt.
package receipttest

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// SmallFilesystem mounts a tmpfs of size bytes on a fresh directory and returns it; it is
// unmounted when the test ends. Mounting needs root: without it the test is skipped, unless
// AIRLOCK_REQUIRE_ROOT=1 (which CI sets when it runs as root) turns the skip into a failure.
func SmallFilesystem(t testing.TB, size int64) string {
	t.Helper()
	dir := t.TempDir()
	err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0755", size))
	if err != nil {
		if os.Getenv("AIRLOCK_REQUIRE_ROOT") == "1" {
			t.Fatalf("mount a %d-byte tmpfs (AIRLOCK_REQUIRE_ROOT=1): %v", size, err)
		}
		t.Skipf("cannot mount a small filesystem to fill (needs root; set AIRLOCK_REQUIRE_ROOT=1 to fail instead): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}
