//go:build linux

package sandbox

import (
	"errors"
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
//
// Not every change to a stamped directory's entries calls for a new plan before the next
// command. A stamped directory holds granted entries (files: the granted files in it, or,
// in a directory split around a protected path, every entry granted there) or is one a
// missing credential store would appear in (names). When its entries change, each granted
// entry is looked at by name through the directory's descriptor:
//
//   - one that is now another file or directory (replaced by a rename: a resolver rewriting
//     /etc/resolv.conf) would not be granted under its name any more, and one of the names
//     now existing would be granted with the directory around it: the generation is stale,
//     and the next command gets a new one (stampChanged);
//   - otherwise nothing the generation grants changed. In a split directory an entry may be
//     new, which only a new plan grants: within a write root (the workspace) the next command
//     waits for that plan, since the entry is likely what the last command or file tool just
//     made (stampChanged); elsewhere (/, /etc, a home) entries are made by the host's own
//     processes, in no order with Airlock's commands, and a new plan is made off every
//     command's path while commands go on under the current one, which grants less
//     (stampGrown). Outside a split directory a new entry is not granted at all
//     (stampSame).
//
// The stamp's mtime is then moved on. A busy host's home directory (a shell's history, an
// editor's swap file) otherwise cost the next command a new plan, ruleset and restricted
// thread: 2-4 ms here, and commands took twice as long as a raw fork/exec.
type stamp struct {
	path     string
	dev, ino uint64
	mtime    unix.Timespec
	fd       int
	whole    bool // split around a protected path: every entry is granted by name
	eager    bool // whole, and within a write root: a new entry means a new plan now
	files    []fileID
	names    []string
}

// fileID is a granted entry of a stamped directory: its name there, and what it was.
type fileID struct {
	name     string
	dev, ino uint64
}

// stampSpec is a directory to stamp and what in it the generation depends on (see stamp).
type stampSpec struct {
	path         string
	whole, eager bool
	files        []string
	names        []string
}

// stampState is what a look at a stamp found.
type stampState int

const (
	stampSame    stampState = iota // nothing the generation depends on changed
	stampGrown                     // a split directory outside the write roots has new entries
	stampChanged                   // the generation is stale
)

// current looks at the stamp's path.
func (st *stamp) current() bool {
	var now unix.Stat_t
	if err := unix.Stat(st.path, &now); err != nil {
		return false
	}
	return st.sameDir(&now) && now.Mtim == st.mtime
}

// sameDir reports whether now is the stamped directory itself.
func (st *stamp) sameDir(now *unix.Stat_t) bool {
	return uint64(now.Dev) == st.dev && now.Ino == st.ino
}

// look looks at the stamped directory through its descriptor (see stamp). A change that
// leaves the generation current moves the stamp's mtime on.
func (st *stamp) look() stampState {
	if st.fd < 0 {
		if st.current() {
			return stampSame
		}
		return stampChanged
	}
	var now unix.Stat_t
	if err := unix.Fstat(st.fd, &now); err != nil {
		return stampChanged
	}
	switch {
	case now.Nlink == 0 || !st.sameDir(&now):
		return stampChanged
	case now.Mtim == st.mtime:
		return stampSame
	case st.eager || !st.entriesSame():
		return stampChanged
	}
	// The mtime read before the entries were looked at: a change made after that look
	// moves it again, and is looked at next time.
	st.mtime = now.Mtim
	if st.whole {
		return stampGrown
	}
	return stampSame
}

// entriesSame reports whether each granted entry that is still there is what it was, and
// none of the watched names exists.
func (st *stamp) entriesSame() bool {
	var s unix.Stat_t
	for _, f := range st.files {
		err := unix.Fstatat(st.fd, f.name, &s, unix.AT_SYMLINK_NOFOLLOW)
		switch {
		case errors.Is(err, unix.ENOENT):
			// Gone: its rule grants nothing under this name. (A file made under the
			// name later is a new entry, seen at the next change.)
		case err != nil || uint64(s.Dev) != f.dev || s.Ino != f.ino:
			return false
		}
	}
	for _, n := range st.names {
		if err := unix.Fstatat(st.fd, n, &s, unix.AT_SYMLINK_NOFOLLOW); !errors.Is(err, unix.ENOENT) {
			return false
		}
	}
	return true
}

// stampDirs are the directories whose entries l grants one by one (those split around a
// protected path, and the parents of granted files) and those a missing protected path
// would appear in, each with what in it the generation depends on. writable are the write
// roots and the temporary directory: a split directory within one is eager.
func stampDirs(l layout, writable []string) []stampSpec {
	specs := map[string]*stampSpec{}
	spec := func(d string) *stampSpec {
		if specs[d] == nil {
			specs[d] = &stampSpec{path: d}
		}
		return specs[d]
	}
	for _, d := range l.Split {
		s := spec(d)
		s.whole = true
		s.eager = containedIn(writable, d) != ""
	}
	for _, w := range l.Watch {
		s := spec(w.Dir)
		s.names = append(s.names, w.Names...)
	}
	for _, g := range l.Grants {
		if g.Path == "/" || strings.HasPrefix(g.Path, "/dev/") {
			continue
		}
		parent := filepath.Dir(g.Path)
		if (!g.Dir && !g.ListOnly) || (specs[parent] != nil && specs[parent].whole) {
			s := spec(parent)
			s.files = append(s.files, filepath.Base(g.Path))
		}
	}
	out := make([]stampSpec, 0, len(specs))
	for _, s := range specs {
		out = append(out, *s)
	}
	return out
}

// stampsOf opens the directories and records what they, and the granted entries in them,
// look like now. A directory that is gone grants nothing and is not stamped; a new one there
// is not granted either. A granted entry that is gone is not recorded: the ruleset made
// after does not grant it.
func stampsOf(specs []stampSpec) []stamp {
	out := make([]stamp, 0, len(specs))
	for _, sp := range specs {
		fd, err := unix.Open(sp.path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			fd = -1
		}
		var st unix.Stat_t
		if fd >= 0 {
			err = unix.Fstat(fd, &st)
		} else {
			err = unix.Stat(sp.path, &st)
		}
		if err != nil {
			if fd >= 0 {
				_ = unix.Close(fd)
			}
			continue
		}
		s := stamp{path: sp.path, dev: uint64(st.Dev), ino: st.Ino, mtime: st.Mtim, fd: fd, whole: sp.whole, eager: sp.eager, names: sp.names}
		for _, name := range sp.files {
			var fs unix.Stat_t
			if fd >= 0 && unix.Fstatat(fd, name, &fs, unix.AT_SYMLINK_NOFOLLOW) == nil {
				s.files = append(s.files, fileID{name: name, dev: uint64(fs.Dev), ino: fs.Ino})
			}
		}
		out = append(out, s)
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

// stampsChanged reports whether a stamp changed (stampChanged) or a split directory outside
// the write roots grew (stampGrown): through the descriptors, and by path when the last look
// by path (lastFull) is older than fullCheckEvery; lastFull is moved on when that look finds
// them all current. The caller holds the sandbox's lock.
func stampsChanged(stamps []stamp, lastFull *time.Time, now time.Time) stampState {
	state := stampSame
	for i := range stamps {
		switch stamps[i].look() {
		case stampChanged:
			return stampChanged
		case stampGrown:
			state = stampGrown
		}
	}
	if now.Sub(*lastFull) < fullCheckEvery {
		return state
	}
	for i := range stamps {
		if !stamps[i].current() {
			return stampChanged
		}
	}
	*lastFull = now
	return state
}
