//go:build linux

package sandbox

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// stampFixture is a stamped directory (base/a/b) watched as a generation watches it.
type stampFixture struct {
	base, a, b string
	w          *stampWatch
	stamps     []stamp
	now        time.Time
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
	f.watch(t, f.b)
	return f
}

func (f *stampFixture) watch(t *testing.T, dirs ...string) {
	t.Helper()
	f.w = watchStamps(dirs)
	if f.w == nil {
		t.Fatal("no inotify watch could be made")
	}
	t.Cleanup(f.w.close)
	f.stamps = stampsOf(dirs)
	f.w.setStamps(f.stamps)
	f.now = f.w.lastFull
}

// looks reports how many stamps a check looks at now, a millisecond after the last, and
// settles the watch when it looked at all of them and they are current (as the sandbox
// does).
func (f *stampFixture) looks() int {
	f.now = f.now.Add(time.Millisecond)
	n := len(f.w.toCheck(f.stamps, f.now))
	if n == len(f.stamps) && f.current() {
		f.w.settled(f.now)
	}
	return n
}

func (f *stampFixture) current() bool {
	for _, st := range f.stamps {
		if !st.current() {
			return false
		}
	}
	return true
}

// TestStampWatchLooksOnlyAfterAnEvent: with nothing changed a check looks at no stamp; an
// entry made in the stamped directory, its attributes changed, or an ancestor renamed, has
// the next check look at every stamp, and so every check after it while the stamp differs
// (a new generation then takes new stamps); a check after a look that found the stamps
// current is quiet again. An entry made beside an ancestor's path is not looked at.
func TestStampWatchLooksOnlyAfterAnEvent(t *testing.T) {
	f := newStampFixture(t)
	if n := f.looks(); n != 0 {
		t.Fatalf("a check with nothing changed looked at %d stamps", n)
	}
	steps := []struct {
		name    string
		do      func() error
		looks   bool
		current bool // the stamp after the step
	}{
		{"a file made in the stamped directory", func() error { return os.WriteFile(filepath.Join(f.b, "new"), nil, 0o644) }, true, false},
		{"a file made beside the stamped path", func() error { return os.WriteFile(filepath.Join(f.a, "beside"), nil, 0o644) }, false, true},
		{"a file made in the base", func() error { return os.WriteFile(filepath.Join(f.base, "beside"), nil, 0o644) }, false, true},
		{"the stamped directory's mode changed", func() error { return os.Chmod(f.b, 0o700) }, true, true},
		{"an ancestor renamed", func() error { return os.Rename(f.a, f.a+".old") }, true, false},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatal(err)
		}
		if got := f.looks() > 0; got != s.looks {
			t.Errorf("%s: the next check looked at the stamps: %v, want %v", s.name, got, s.looks)
		}
		if got := f.current(); got != s.current {
			t.Fatalf("%s: the stamp is current: %v, want %v", s.name, got, s.current)
		}
		if !s.current {
			if f.looks() == 0 {
				t.Errorf("%s: a second check, the stamp still changed, looked at no stamp", s.name)
			}
			if _, err := os.Stat(f.b); err != nil {
				break
			}
			f.watch(t, f.b) // a new generation
		}
		if n := f.looks(); n != 0 {
			t.Errorf("%s: the check after looked at %d stamps, with nothing changed since", s.name, n)
		}
	}
}

// TestStampWatchReplacedDirectory: a directory renamed over the (empty) stamped one is seen,
// and so is the stamped directory's removal, after which the watch is given up (the kernel
// dropped it) and every check looks.
func TestStampWatchReplacedDirectory(t *testing.T) {
	f := newStampFixture(t)
	other := filepath.Join(f.a, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	f.looks()                                       // the mkdir beside it: not a stamped directory's event
	if err := unix.Rename(other, f.b); err != nil { // os.Rename refuses a directory as the target
		t.Fatal(err)
	}
	if f.looks() == 0 {
		t.Fatal("a directory renamed over the stamped one was not looked at")
	}
	if f.current() {
		t.Fatal("the stamp is current with another directory at its path")
	}

	g := newStampFixture(t)
	if err := os.Remove(g.b); err != nil {
		t.Fatal(err)
	}
	if g.looks() == 0 {
		t.Fatal("the stamped directory's removal was not looked at")
	}
	for i := 0; i < 3; i++ {
		if g.looks() == 0 {
			t.Fatal("a check after the watch ended did not look at every stamp")
		}
	}
}

// TestStampWatchLinksOverflowAndTime: a stamped path through a symbolic link is looked at on
// every check (its link can be retargeted without an event here); every stamp is looked at
// once fullCheckEvery has passed; without inotify, every check looks at every stamp.
func TestStampWatchLinksOverflowAndTime(t *testing.T) {
	f := newStampFixture(t)
	link := filepath.Join(f.base, "link")
	if err := os.Symlink(f.a, link); err != nil {
		t.Fatal(err)
	}
	f.watch(t, f.b, filepath.Join(link, "b"))
	if n := f.looks(); n != 1 {
		t.Errorf("a quiet check looked at %d stamps, want the one through a link", n)
	}
	f.now = f.now.Add(fullCheckEvery)
	if n := f.looks(); n != 2 {
		t.Errorf("a check %v after the last full one looked at %d stamps, want 2", fullCheckEvery, n)
	}
	var none *stampWatch
	if n := len(none.toCheck(f.stamps, time.Now())); n != 2 {
		t.Errorf("without a watch a check looked at %d stamps, want 2", n)
	}
}

// TestIgnoredEvents: the events read are walked whole; an IN_IGNORED, or a buffer that ends
// inside an event, ends the watch; an overflow does not (the check it causes looks at every
// stamp, and the queue goes on).
func TestIgnoredEvents(t *testing.T) {
	ev := func(mask uint32, name string) []byte {
		n := 0
		if name != "" {
			n = (len(name) + 16) / 16 * 16
		}
		b := make([]byte, unix.SizeofInotifyEvent+n)
		binary.NativeEndian.PutUint32(b[0:], 1)
		binary.NativeEndian.PutUint32(b[4:], mask)
		binary.NativeEndian.PutUint32(b[12:], uint32(n))
		copy(b[unix.SizeofInotifyEvent:], name)
		return b
	}
	cat := func(bs ...[]byte) []byte {
		return []byte(strings.Join(func() []string {
			var s []string
			for _, b := range bs {
				s = append(s, string(b))
			}
			return s
		}(), ""))
	}
	for _, c := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"create", ev(unix.IN_CREATE, "x"), false},
		{"create then overflow", cat(ev(unix.IN_CREATE, "a-longer-name"), ev(unix.IN_Q_OVERFLOW, "")), false},
		{"move then ignored", cat(ev(unix.IN_MOVE_SELF, ""), ev(unix.IN_IGNORED, "")), true},
		{"cut inside the header", ev(unix.IN_CREATE, "x")[:10], true},
		{"cut inside the name", ev(unix.IN_CREATE, "x")[:unix.SizeofInotifyEvent+4], true},
	} {
		if got := ignored(c.b); got != c.want {
			t.Errorf("%s: ignored = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestStampWatchAskedFromARestrictedThread: the helper's reader asks Current on a restricted
// thread, whose seccomp filter and Landlock domain must let the quiet check through (a
// refused ioctl would have every check look at every stamp, unnoticed but for the time).
func TestStampWatchAskedFromARestrictedThread(t *testing.T) {
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
	sb, err := New(ModeLandlock, Policy{ReadRoots: []string{ws}, WriteRoots: []string{ws}, TempDir: t.TempDir(),
		Hidden: func(rel string) bool { return strings.HasSuffix(rel, ".env") }})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	w := sb.gen.watch
	if w == nil || len(sb.gen.stamps) == 0 {
		t.Fatalf("a workspace split around .env has no watched stamp: %+v", sb.gen.stamps)
	}
	done := make(chan error, 1)
	if err := sb.Lend(func(wk *Worker, restricted error) {
		if restricted != nil {
			done <- restricted
			return
		}
		_, err := unix.IoctlGetInt(w.fd, unix.TIOCINQ)
		if err == nil && !wk.Current() {
			err = errors.New("the only generation is not current")
		}
		done <- err
	}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("on a restricted thread: %v", err)
	}
}
