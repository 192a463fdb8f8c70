//go:build linux

package sandbox

import (
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Stamps, and how a change to one is noticed. Every command asks whether its generation is
// still current (Worker.Current, Sandbox.Go), on the path between a request and its fork: a
// stat of each stamped directory by its path cost 15-22 µs a command here, a tenth of what
// the helper added to a command. Each stamped directory is therefore also held open (O_PATH)
// from when it is stamped, and a check looks at the directory itself through that
// descriptor: an fstat, no walk of its path. What the stamps guard is seen that way at once:
// an entry made, removed or renamed in a stamped directory moves its mtime, and a stamped
// directory removed, or replaced by a rename over it, has no links left.
//
// What an fstat cannot see is the path coming to name another directory (the stamped one, or
// one of its ancestors, renamed away and another put in its place; a link on the way
// retargeted): the stamps are looked at by path as before when the last such look is older
// than fullCheckEvery. A generation that is stale that way for up to that long only grants
// less than a new one would: Landlock binds its rules to the directories and files that were
// there, which the path no longer names, and nothing new is granted.
//
// inotify would say all of it with one ioctl, but freeing an inotify instance waits for an
// SRCU grace period: ~12 ms here, which a helper paid at exit (its client waits for that)
// and a stale generation paid under the sandbox's lock.

// stamp is what a directory looked like when its entries were granted, and the directory
// itself, held open (fd, -1 when it could not be opened: then it is looked at by path).
type stamp struct {
	path     string
	dev, ino uint64
	mtime    unix.Timespec
	fd       int
}

// current looks at the stamp's path.
func (st stamp) current() bool {
	var now unix.Stat_t
	if err := unix.Stat(st.path, &now); err != nil {
		return false
	}
	return st.same(&now)
}

// unchanged looks at the stamped directory through its descriptor: false when its entries or
// its mtime changed, or it was removed.
func (st stamp) unchanged() bool {
	if st.fd < 0 {
		return st.current()
	}
	var now unix.Stat_t
	if err := unix.Fstat(st.fd, &now); err != nil {
		return false
	}
	return now.Nlink > 0 && st.same(&now)
}

func (st stamp) same(now *unix.Stat_t) bool {
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

// stampsOf opens dirs and records what they look like now. A directory that is gone grants
// nothing and is not stamped; a new one there is not granted either.
func stampsOf(dirs []string) []stamp {
	out := make([]stamp, 0, len(dirs))
	for _, d := range dirs {
		fd, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			fd = -1
		}
		var st unix.Stat_t
		if fd >= 0 {
			err = unix.Fstat(fd, &st)
		} else {
			err = unix.Stat(d, &st)
		}
		if err != nil {
			if fd >= 0 {
				_ = unix.Close(fd)
			}
			continue
		}
		out = append(out, stamp{path: d, dev: uint64(st.Dev), ino: st.Ino, mtime: st.Mtim, fd: fd})
	}
	return out
}

// closeStamps closes the stamped directories' descriptors.
func closeStamps(stamps []stamp) {
	for i := range stamps {
		if stamps[i].fd >= 0 {
			_ = unix.Close(stamps[i].fd)
			stamps[i].fd = -1
		}
	}
}

// fullCheckEvery bounds how long a stamped path that comes to name another directory goes
// unseen (see the top of this file).
const fullCheckEvery = time.Second

// stampsChanged reports whether a stamp changed: through the descriptors, and by path when
// the last look by path (lastFull) is older than fullCheckEvery; lastFull is moved on when
// that look finds them all current. The caller holds the sandbox's lock.
func stampsChanged(stamps []stamp, lastFull *time.Time, now time.Time) bool {
	for _, st := range stamps {
		if !st.unchanged() {
			return true
		}
	}
	if now.Sub(*lastFull) < fullCheckEvery {
		return false
	}
	for _, st := range stamps {
		if !st.current() {
			return true
		}
	}
	*lastFull = now
	return false
}
