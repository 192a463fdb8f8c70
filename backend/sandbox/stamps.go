//go:build linux

package sandbox

import (
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Stamps, and how a change to one is noticed. Every command asks whether its generation is
// still current (Worker.Current, Sandbox.Go), on the path between a request and its fork: a
// stat of each stamped directory cost 15-22 µs a command here, a tenth of what the helper
// adds to a command. An inotify watch on each stamped directory, and on its ancestors, says
// the same in one ioctl (FIONREAD: is any event queued?) when nothing happened, which is
// nearly always. The stat stays the judge: any event, however unrelated it may be, has the
// stamps looked at as before, and so do an overflowed queue, a watch the kernel dropped
// (IN_IGNORED: the directory was removed, or its file system unmounted), a stamped path
// that goes through a symbolic link (whose retargeting no watch here would see), a kernel
// or a user that has no inotify to spare, and, once a second at most (fullCheckEvery),
// every check, for what no event reports (a mount over a stamped path).

// stamp is what a directory looked like when its entries were granted.
type stamp struct {
	path     string
	dev, ino uint64
	mtime    unix.Timespec
}

func (st stamp) current() bool {
	var now unix.Stat_t
	if err := unix.Stat(st.path, &now); err != nil {
		return false
	}
	return uint64(now.Dev) == st.dev && now.Ino == st.ino && now.Mtim == st.mtime
}

// stampDirs are the directories whose entries l grants one by one (those split around a
// protected path, and the parents of granted files) and those a missing protected path
// would appear in.
func stampDirs(l layout) []string {
	dirs := map[string]bool{}
	for _, d := range append(append([]string(nil), l.Split...), l.Watch...) {
		dirs[d] = true
	}
	for _, g := range l.Grants {
		if !g.Dir && !g.ListOnly && !strings.HasPrefix(g.Path, "/dev/") {
			dirs[filepath.Dir(g.Path)] = true
		}
	}
	out := make([]string, 0, len(dirs))
	for d := range dirs {
		out = append(out, d)
	}
	return out
}

// stampsOf records what dirs look like now.
func stampsOf(dirs []string) []stamp {
	out := make([]stamp, 0, len(dirs))
	for _, d := range dirs {
		var st unix.Stat_t
		if err := unix.Stat(d, &st); err != nil {
			continue // a directory that is gone grants nothing; a new one is not granted
		}
		out = append(out, stamp{path: d, dev: uint64(st.Dev), ino: st.Ino, mtime: st.Mtim})
	}
	return out
}

// fullCheckEvery bounds how long a change no event reports (a mount over a stamped path)
// goes unseen: the stamps are all looked at when the last full look is older.
const fullCheckEvery = time.Second

// Events asked for. A stamped directory: its entries made, removed or renamed (what moves
// its mtime), its own attributes (utimes on it; its link count when a rename replaces it),
// and its own removal or rename. An ancestor: only its own rename (it cannot be replaced or
// removed while it holds the stamped path), and the IN_IGNORED every watch gets when it ends.
const (
	stampEvents = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
		unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
	ancestorEvents = unix.IN_MOVE_SELF | unix.IN_DELETE_SELF | unix.IN_ONLYDIR
)

// stampWatch tells whether a generation's stamps may have changed since it last said no.
// Its methods are called under the sandbox's lock.
type stampWatch struct {
	fd int // -1 once the watch is given up: every check looks at every stamp
	// unwatched are the stamps a watch cannot stand for (a path through a symbolic link):
	// looked at on every check.
	unwatched []stamp
	lastFull  time.Time // when a look at every stamp last found them all current
	dirty     bool      // toCheck gave every stamp and no look has settled them since
	buf       []byte
}

// watchStamps sets the watches, before the stamps are taken (a change in between is then
// both in the stamp and in the queue, which costs one look, never a miss). Nil when no
// watch can be made: every check then looks at every stamp, as before.
func watchStamps(dirs []string) *stampWatch {
	if len(dirs) == 0 {
		return nil
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	w := &stampWatch{fd: fd, lastFull: time.Now()}
	ancestors := map[string]bool{}
	for _, d := range dirs {
		if _, err := unix.InotifyAddWatch(fd, d, stampEvents|unix.IN_MASK_ADD); err != nil {
			_ = unix.Close(fd)
			return nil
		}
		for a := filepath.Dir(d); ; a = filepath.Dir(a) {
			ancestors[a] = true
			if a == "/" || a == "." {
				break
			}
		}
	}
	for a := range ancestors {
		// IN_MASK_ADD: an ancestor that is stamped too keeps its stamp's events.
		if _, err := unix.InotifyAddWatch(fd, a, ancestorEvents|unix.IN_MASK_ADD); err != nil {
			_ = unix.Close(fd)
			return nil
		}
	}
	return w
}

// setStamps takes the stamps the watch stands for, and those it cannot: a stamped path that
// is not its own resolution goes through a link.
func (w *stampWatch) setStamps(stamps []stamp) {
	if w == nil {
		return
	}
	for _, st := range stamps {
		if real, err := filepath.EvalSymlinks(st.path); err != nil || real != st.path {
			w.unwatched = append(w.unwatched, st)
		}
	}
}

// toCheck returns the stamps to look at now: only the unwatched ones (often none) when the
// last look found every stamp current, is recent, and no event has been queued since; all
// of them otherwise, until a look finds them all current again (settled). The queue is
// drained here, so a stamp that changed is remembered by the watch (dirty), not by the
// queue.
func (w *stampWatch) toCheck(all []stamp, now time.Time) []stamp {
	if w == nil || w.fd < 0 {
		return all
	}
	if !w.dirty && now.Sub(w.lastFull) < fullCheckEvery {
		n, err := unix.IoctlGetInt(w.fd, unix.TIOCINQ) // FIONREAD
		if err == nil && n == 0 {
			return w.unwatched
		}
	}
	if !w.drain() {
		w.close() // a watch is gone: from now on every check looks at every stamp
	}
	w.dirty = true
	return all
}

// settled records that a look at every stamp (toCheck's all) found them current at now.
func (w *stampWatch) settled(now time.Time) {
	if w != nil {
		w.dirty, w.lastFull = false, now
	}
}

// drain reads every queued event; false when one says a watch ended (IN_IGNORED) or the
// queue could not be read.
func (w *stampWatch) drain() bool {
	if w.buf == nil {
		w.buf = make([]byte, 16*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	}
	for {
		n, err := unix.Read(w.fd, w.buf)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return true
		case err != nil || n <= 0:
			return false
		}
		if ignored(w.buf[:n]) {
			return false
		}
	}
}

// ignored reports whether the events in b hold an IN_IGNORED (or are not whole events).
func ignored(b []byte) bool {
	for len(b) > 0 {
		if len(b) < unix.SizeofInotifyEvent {
			return true
		}
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		size := unix.SizeofInotifyEvent + int(ev.Len)
		if ev.Mask&unix.IN_IGNORED != 0 || size > len(b) {
			return true
		}
		b = b[size:]
	}
	return false
}

func (w *stampWatch) close() {
	if w != nil && w.fd >= 0 {
		_ = unix.Close(w.fd)
		w.fd = -1
	}
}
