//go:build linux

package sandbox

import (
	"errors"
	"fmt"
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
	f.stamps = stampsOf([]stampSpec{{path: f.b, whole: true, eager: true}})
	t.Cleanup(func() { closeStamps(f.stamps) })
	if len(f.stamps) != 1 || f.stamps[0].fd < 0 {
		t.Fatalf("stamping %s: %+v", f.b, f.stamps)
	}
	f.lastFull = time.Now()
}

// changed is the check a command's start makes, the last look by path recent.
func (f *stampFixture) changed() bool {
	return stampsChanged(f.stamps, &f.lastFull, f.lastFull.Add(time.Millisecond)) == stampChanged
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
	if stampsChanged(f.stamps, &f.lastFull, last.Add(fullCheckEvery)) != stampChanged {
		t.Error("the look by path after fullCheckEvery did not see another directory at the stamped path")
	}
	if !f.lastFull.Equal(last) {
		t.Error("a look by path that found a change was taken as the last good one")
	}
	g := newStampFixture(t)
	now := g.lastFull.Add(fullCheckEvery)
	if stampsChanged(g.stamps, &g.lastFull, now) != stampSame || !g.lastFull.Equal(now) {
		t.Errorf("a look by path with nothing changed: lastFull %v, want %v", g.lastFull, now)
	}
}

// TestStampsCheckedFromARestrictedThread: the helper's reader asks Current on a restricted
// thread, whose seccomp filter and Landlock domain must let the check through the
// descriptors (an fstat refused would look like a change to every command), and there it
// sees a new entry in the workspace (split around .env); closing the sandbox closes the
// descriptors.
func TestStampsCheckedFromARestrictedThread(t *testing.T) {
	RequireLandlock(t)
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

// TestStampsOfGrantedFilesAndWatchedNames: in a stamped directory that is not split (it holds
// granted files, or a missing credential store would appear in it), an entry made, removed or
// renamed there is no change, and moves the stamp on, nor is a granted file removed; a granted
// file replaced, a file made again under its name, or a watched name made, is one.
func TestStampsOfGrantedFilesAndWatchedNames(t *testing.T) {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	granted := filepath.Join(d, ".gitconfig")
	write := func(p string) {
		t.Helper()
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(granted)
	var stamps []stamp
	var lastFull time.Time
	restamp := func() {
		closeStamps(stamps)
		stamps = stampsOf([]stampSpec{{path: d, files: []string{".gitconfig"}, names: []string{".ssh"}}})
		if len(stamps) != 1 || len(stamps[0].files) != 1 {
			t.Fatalf("stamping %s: %+v", d, stamps)
		}
		lastFull = time.Now()
	}
	t.Cleanup(func() { closeStamps(stamps) })
	changed := func() bool { return stampsChanged(stamps, &lastFull, lastFull.Add(time.Millisecond)) != stampSame }
	restamp()
	for _, step := range []struct {
		what string
		do   func()
		want bool
	}{
		{"an entry made beside the granted file", func() { write(filepath.Join(d, ".zsh_history.new")) }, false},
		{"that entry renamed", func() { must(t, os.Rename(filepath.Join(d, ".zsh_history.new"), filepath.Join(d, ".zsh_history"))) }, false},
		{"that entry removed", func() { must(t, os.Remove(filepath.Join(d, ".zsh_history"))) }, false},
		{"a directory made there", func() { must(t, os.Mkdir(filepath.Join(d, ".cache2"), 0o755)) }, false},
		{"the granted file replaced by a rename", func() {
			write(filepath.Join(d, ".gitconfig.tmp"))
			must(t, os.Rename(filepath.Join(d, ".gitconfig.tmp"), granted))
		}, true},
		{"the granted file removed (its rule grants nothing now)", func() { must(t, os.Remove(granted)) }, false},
		{"a file made under the granted file's name", func() { write(granted) }, true},
		{"a watched name made", func() { must(t, os.Mkdir(filepath.Join(d, ".ssh"), 0o700)) }, true},
	} {
		step.do()
		if got := changed(); got != step.want {
			t.Fatalf("%s: changed %v, want %v", step.what, got, step.want)
		}
		if !step.want {
			// The stamp moved on: the same look, and the look by path, find nothing.
			if changed() || stampsChanged(stamps, &lastFull, lastFull.Add(fullCheckEvery)) != stampSame {
				t.Fatalf("%s: still a change on the next look", step.what)
			}
			continue
		}
		if _, err := os.Stat(granted); err != nil {
			write(granted)
		}
		if err := os.Remove(filepath.Join(d, ".ssh")); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		restamp()
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestHomeChurnKeepsTheGeneration: a home directory holds a granted file (~/.gitconfig), so it
// is stamped; files a shell or an editor makes, renames and removes there leave the sandbox on
// its generation (asked on a restricted thread, as the helper's reader asks), and a new plan
// comes only when the granted file is replaced.
func TestHomeChurnKeepsTheGeneration(t *testing.T) {
	RequireLandlock(t)
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n"), 0o644))
	ws := t.TempDir()
	sb, err := New(ModeLandlock, Policy{ReadRoots: []string{ws}, WriteRoots: []string{ws}, TempDir: t.TempDir(), Home: home, SystemRead: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	g := sb.gen
	current := func() bool {
		t.Helper()
		done := make(chan bool, 1)
		if err := sb.Lend(func(wk *Worker, restricted error) { done <- restricted == nil && wk.Current() }); err != nil {
			t.Fatal(err)
		}
		return <-done
	}
	for i := 0; i < 20; i++ {
		tmp := filepath.Join(home, fmt.Sprintf(".zsh_history.%d", i))
		must(t, os.WriteFile(tmp, []byte("ls\n"), 0o600))
		must(t, os.Rename(tmp, filepath.Join(home, ".zsh_history")))
		if !current() {
			t.Fatalf("round %d: a file made and renamed in the home made the generation stale", i)
		}
	}
	if now, err := sb.current(); err != nil || now != g {
		t.Fatalf("the sandbox planned again for churn in the home: %v", err)
	}
	tmp := filepath.Join(home, ".gitconfig.tmp")
	must(t, os.WriteFile(tmp, []byte("[core]\n"), 0o644))
	must(t, os.Rename(tmp, filepath.Join(home, ".gitconfig")))
	if now, err := sb.current(); err != nil || now == g {
		t.Fatalf("the granted ~/.gitconfig replaced, and the sandbox kept its generation (%v)", err)
	}
}

// TestStampOfASplitDirectory: in a directory split around a protected path outside the write
// roots, a new entry is a growth (a new plan off the commands' path) seen once, a granted entry
// removed is one too, and a granted entry replaced makes the generation stale; within a write
// root (eager) a new entry makes it stale at once.
func TestStampOfASplitDirectory(t *testing.T) {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"passwd", "hosts"} {
		must(t, os.WriteFile(filepath.Join(d, n), []byte("x\n"), 0o644))
	}
	var stamps []stamp
	var lastFull time.Time
	restamp := func(eager bool) {
		closeStamps(stamps)
		stamps = stampsOf([]stampSpec{{path: d, whole: true, eager: eager, files: []string{"passwd", "hosts"}}})
		lastFull = time.Now()
	}
	t.Cleanup(func() { closeStamps(stamps) })
	look := func() stampState { return stampsChanged(stamps, &lastFull, lastFull.Add(time.Millisecond)) }
	restamp(false)
	must(t, os.WriteFile(filepath.Join(d, "new"), nil, 0o644))
	if got, again := look(), look(); got != stampGrown || again != stampSame {
		t.Fatalf("a new entry: %v then %v, want grown then same", got, again)
	}
	must(t, os.Remove(filepath.Join(d, "hosts")))
	if got := look(); got != stampGrown {
		t.Fatalf("a granted entry removed: %v, want grown", got)
	}
	must(t, os.WriteFile(filepath.Join(d, "passwd.tmp"), []byte("y\n"), 0o644))
	must(t, os.Rename(filepath.Join(d, "passwd.tmp"), filepath.Join(d, "passwd")))
	if got := look(); got != stampChanged {
		t.Fatalf("a granted entry replaced: %v, want changed", got)
	}
	restamp(true)
	must(t, os.WriteFile(filepath.Join(d, "new2"), nil, 0o644))
	if got := look(); got != stampChanged {
		t.Fatalf("a new entry in a write root: %v, want changed", got)
	}
}

// TestSplitReadRootGrowsOffThePath: a read root split around a protected file takes a new
// entry without the next command waiting for a new plan (the sandbox keeps its generation);
// the new generation, planned off the commands' path, replaces it soon after, and a command
// then reads the new entry while the protected file stays unreadable.
func TestSplitReadRootGrowsOffThePath(t *testing.T) {
	RequireLandlock(t)
	ro, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(ro, "secret")
	must(t, os.WriteFile(secret, []byte("s\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(ro, "old.txt"), []byte("o\n"), 0o644))
	sb, err := New(ModeLandlock, Policy{ReadRoots: []string{ro}, WriteRoots: []string{t.TempDir()}, TempDir: t.TempDir(),
		Home: t.TempDir(), SystemRead: []string{}, Protected: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	g := sb.gen
	read := func(p string) error {
		return sb.Do(func() error { _, err := os.ReadFile(p); return err })
	}
	if err := read(filepath.Join(ro, "old.txt")); err != nil {
		t.Fatalf("a granted file in the split read root: %v", err)
	}
	must(t, os.WriteFile(filepath.Join(ro, "new.txt"), []byte("n\n"), 0o644))
	if now, err := sb.current(); err != nil || now != g {
		t.Fatalf("a new entry in a split read root: the next command waited for a new plan (%v)", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		sb.mu.Lock()
		replaced := sb.gen != g
		sb.mu.Unlock()
		if replaced {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no new generation 5 s after the read root took a new entry")
		}
		time.Sleep(time.Millisecond)
	}
	if err := read(filepath.Join(ro, "new.txt")); err != nil {
		t.Errorf("the new entry, after the new generation: %v", err)
	}
	if err := read(secret); err == nil {
		t.Error("the protected file became readable with the new generation")
	}
}
