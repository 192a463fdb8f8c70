//go:build linux

package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// stampFixture is a stamped directory base/a/b, stamped as a generation stamps it.
type stampFixture struct {
	base, a, b string
	stamps     []stamp
	lastFull   time.Time
}

func newStampFixture(t *testing.T) *stampFixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &stampFixture{base: base, a: filepath.Join(base, "a"), b: filepath.Join(base, "a", "b")}
	if err := os.MkdirAll(f.b, 0o755); err != nil {
		t.Fatal(err)
	}
	f.restamp(t)
	return f
}

// restamp takes the stamps anew, as a new generation does.
func (f *stampFixture) restamp(t *testing.T) {
	t.Helper()
	closeStamps(f.stamps)
	f.stamps = stampsOf([]string{f.b})
	t.Cleanup(func() { closeStamps(f.stamps) })
	if len(f.stamps) != 1 || f.stamps[0].fd < 0 {
		t.Fatalf("stamping %s: %+v", f.b, f.stamps)
	}
	f.lastFull = time.Now()
}

// changed is the check a command's start makes, the last look by path recent.
func (f *stampFixture) changed() bool {
	return stampsChanged(f.stamps, &f.lastFull, f.lastFull.Add(time.Millisecond))
}

// TestStampsSeenThroughTheDirectory: an entry made, removed or renamed in a stamped
// directory, the directory removed, or another renamed over it, is seen by the check a
// command makes (through the directory's descriptor, no look by path), at once and until a
// new generation stamps again; an entry made beside its path, or a mode changed, is not a
// change.
func TestStampsSeenThroughTheDirectory(t *testing.T) {
	f := newStampFixture(t)
	if f.changed() {
		t.Fatal("a stamp changed with nothing done")
	}
	steps := []struct {
		name    string
		do      func() error
		changed bool
	}{
		{"a file made in the stamped directory", func() error { return os.WriteFile(filepath.Join(f.b, "new"), nil, 0o644) }, true},
		{"a file renamed in it", func() error { return os.Rename(filepath.Join(f.b, "new"), filepath.Join(f.b, "renamed")) }, true},
		{"a file removed from it", func() error { return os.Remove(filepath.Join(f.b, "renamed")) }, true},
		{"a file made beside its path", func() error { return os.WriteFile(filepath.Join(f.a, "beside"), nil, 0o644) }, false},
		{"its mode changed", func() error { return os.Chmod(f.b, 0o700) }, false},
		{"another directory renamed over it", func() error {
			other := filepath.Join(f.a, "other")
			if err := os.Mkdir(other, 0o755); err != nil {
				return err
			}
			return unix.Rename(other, f.b) // os.Rename refuses a directory as the target
		}, true},
		{"it removed", func() error { return os.Remove(f.b) }, true},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := f.changed(); got != s.changed {
			t.Errorf("%s: changed = %v, want %v", s.name, got, s.changed)
		}
		if !s.changed {
			continue
		}
		if !f.changed() {
			t.Errorf("%s: a second check, nothing stamped anew, saw no change", s.name)
		}
		if _, err := os.Stat(f.b); err == nil {
			f.restamp(t)
		}
	}
}

// TestStampsByPathOnceASecond: a stamped path that comes to name another directory (an
// ancestor renamed away and another put in its place) is not seen through the descriptor,
// and is seen by the look by path that a check makes once fullCheckEvery has passed.
func TestStampsByPathOnceASecond(t *testing.T) {
	f := newStampFixture(t)
	if err := os.Rename(f.a, f.a+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(f.b, 0o755); err != nil {
		t.Fatal(err)
	}
	if f.changed() {
		t.Error("a check within fullCheckEvery of the last look by path looked by path")
	}
	last := f.lastFull
	if !stampsChanged(f.stamps, &f.lastFull, last.Add(fullCheckEvery)) {
		t.Error("the look by path after fullCheckEvery did not see another directory at the stamped path")
	}
	if !f.lastFull.Equal(last) {
		t.Error("a look by path that found a change was taken as the last good one")
	}
	g := newStampFixture(t)
	now := g.lastFull.Add(fullCheckEvery)
	if stampsChanged(g.stamps, &g.lastFull, now) || !g.lastFull.Equal(now) {
		t.Errorf("a look by path with nothing changed: lastFull %v, want %v", g.lastFull, now)
	}
}

// TestStampsCheckedFromARestrictedThread: the helper's reader asks Current on a restricted
// thread, whose seccomp filter and Landlock domain must let the check through the
// descriptors (an fstat refused would look like a change to every command), and there it
// sees a new entry in the workspace (split around .env); closing the sandbox closes the
// descriptors.
func TestStampsCheckedFromARestrictedThread(t *testing.T) {
	if abi := KernelABI(); abi < RequiredABI {
		if os.Getenv("AIRLOCK_REQUIRE_LANDLOCK") == "1" {
			t.Fatalf("Landlock ABI %d, need %d", abi, RequiredABI)
		}
		t.Skipf("Landlock ABI %d, need %d", abi, RequiredABI)
	}
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A home and system directories of the test's own: the host's change under it (a busy
	// machine makes entries in /root), and a stamp there would make the generation stale.
	sb, err := New(ModeLandlock, Policy{ReadRoots: []string{ws}, WriteRoots: []string{ws}, TempDir: t.TempDir(),
		Home: t.TempDir(), SystemRead: []string{},
		Hidden: func(rel string) bool { return strings.HasSuffix(rel, ".env") }})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	g := sb.gen
	if len(g.stamps) == 0 || g.stamps[0].fd < 0 {
		t.Fatalf("a workspace split around .env has no stamp held open: %+v", g.stamps)
	}
	// check lends a function that asks Current on its restricted thread; with change, it
	// asks again after change has made an entry in the workspace.
	check := func(change func()) error {
		done, asked, made := make(chan error, 1), make(chan struct{}), make(chan struct{})
		if err := sb.Lend(func(wk *Worker, restricted error) {
			if restricted != nil {
				done <- restricted
				return
			}
			var st unix.Stat_t
			err := unix.Fstat(g.stamps[0].fd, &st)
			if err == nil && !wk.Current() {
				err = errors.New("the only generation is not current")
			}
			close(asked)
			if change != nil {
				<-made
				if err == nil && wk.Current() {
					err = errors.New("still current after the workspace took a new entry")
				}
			}
			done <- err
		}); err != nil {
			t.Fatal(err)
		}
		if change != nil {
			<-asked
			change()
			close(made)
		}
		return <-done
	}
	if err := check(nil); err != nil {
		t.Fatalf("on a restricted thread: %v", err)
	}
	if err := check(func() { _ = os.WriteFile(filepath.Join(ws, "new.txt"), nil, 0o644) }); err != nil {
		t.Fatalf("on a restricted thread, a new entry: %v", err)
	}
	sb.Close()
	for _, st := range g.stamps {
		if st.fd >= 0 {
			t.Errorf("the closed sandbox's generation still holds %s open", st.path)
		}
	}
}
