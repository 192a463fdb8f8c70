package docker

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestGCEgressDirs: gc removes the socket directory of a session whose process is gone and
// keeps a live one's, and anything that only looks like one (wrong name, no owner file).
func TestGCEgressDirs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	// A process that has exited: its PID names no live process with that start time.
	dead := exec.Command("/bin/true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := dead.Process.Pid
	mk := func(name, owner string) string {
		dir := filepath.Join(tmp, name)
		if err := os.Mkdir(dir, 0o711); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(dir, egressOwnerFile), []byte(owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		old := time.Now().Add(-time.Hour)
		_ = os.Chtimes(dir, old, old)
		return dir
	}
	me := os.Getpid()
	gone := mk("airlock_egress-0123456789ab", strconv.Itoa(deadPID)+" 1\n")
	live := mk("airlock_egress-ba9876543210", strconv.Itoa(me)+" "+processStart(me)+"\n")
	noOwner := mk("airlock_egress-aaaaaaaaaaaa", "")
	otherName := mk("airlock_egress-notasession", strconv.Itoa(deadPID)+" 1\n")

	items := gcEgressDirs(GCOptions{Now: time.Now(), MinAge: time.Minute, NamePrefix: "airlock_"})
	if len(items) != 1 || items[0].Name != gone || !items[0].Removed || items[0].Err != nil {
		t.Fatalf("gc items: %+v", items)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Fatalf("%s left: %v", gone, err)
	}
	for _, d := range []string{live, noOwner, otherName} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("%s removed: %v", d, err)
		}
	}
	// Another prefix is not looked at; --all takes the live one too.
	if items := gcEgressDirs(GCOptions{Now: time.Now(), MinAge: time.Minute, NamePrefix: "other_", All: true}); len(items) != 0 {
		t.Fatalf("other prefix: %+v", items)
	}
	items = gcEgressDirs(GCOptions{Now: time.Now(), All: true, DryRun: true, NamePrefix: "airlock_"})
	if len(items) != 1 || items[0].Name != live || items[0].Removed {
		t.Fatalf("--all --dry-run: %+v", items)
	}
}
