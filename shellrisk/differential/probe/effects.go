package main

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// In effects mode (driver WORKERS BASEUID effects) the image's programs are real — the
// test mounts the host's /usr read-only — and the driver records what each run did to
// files instead of which programs it started. Every run gets a copy of one scratch tree:
//
//	DIR/ws    the workspace and working directory: a git repository with two commits on
//	          main, a branch topic one commit ahead, text files and an awk and a sed
//	          script that write beside the workspace, all owned by the run's user
//	DIR/out   a directory outside the workspace the user may write, as a project's
//	          sibling or /tmp is on a real machine
//	DIR/home  $HOME, empty
//
// The writable places of the container (/tmp, which holds DIR, /dev/shm and /rec) are
// walked before and after the run and compared: paths, types, sizes, content hashes,
// modes, link counts and targets, inode numbers, mtimes and ctimes. inotify adds what a
// walk cannot see: a file opened for writing and closed unchanged. One worker only, so
// that whatever appears in /tmp is this run's.

// Effect is one change a run made to the files of the container.
type Effect struct {
	Path string `json:"path"`
	// Kind is one of created, removed, modified, renamed, linked, replaced, mode,
	// metadata, opened_for_writing.
	Kind string `json:"kind"`
	// Type is the file's type after the change (before it, for removed): file, dir,
	// symlink, other.
	Type string `json:"type"`
	// Target is a symbolic link's target; From is where a renamed or linked file was.
	Target string `json:"target,omitempty"`
	From   string `json:"from,omitempty"`
}

// effectRoots are the container's writable places; the rest of its root is read-only.
var effectRoots = []string{"/tmp", "/dev/shm", "/rec"}

// templateDir holds the scratch tree every run copies; it is on a tmpfs only root may
// write, so no run can change the next one's.
const templateDir = "/seed/tmpl"

const (
	maxHashed  = 1 << 20 // files up to this size are compared by content too
	maxEffects = 200
)

// node is what a walk records of one path.
type node struct {
	typ    string
	mode   fs.FileMode
	size   int64
	nlink  uint64
	ino    uint64
	mtime  int64
	ctime  int64
	target string
	sum    [32]byte
}

// snapshot walks roots and records every path under them.
func snapshot(roots []string) (map[string]node, error) {
	out := map[string]node{}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			var st syscall.Stat_t
			if err := syscall.Lstat(p, &st); err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return fmt.Errorf("lstat %s: %w", p, err)
			}
			n := node{mode: fs.FileMode(st.Mode & 0o7777), size: st.Size, nlink: uint64(st.Nlink), ino: st.Ino,
				mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
			switch st.Mode & syscall.S_IFMT {
			case syscall.S_IFREG:
				n.typ = "file"
				if st.Size <= maxHashed {
					if b, err := os.ReadFile(p); err == nil {
						n.sum = sha256.Sum256(b)
					}
				}
			case syscall.S_IFDIR:
				n.typ = "dir"
			case syscall.S_IFLNK:
				n.typ = "symlink"
				n.target, _ = os.Readlink(p)
			default:
				n.typ = "other"
			}
			out[p] = n
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", root, err)
		}
	}
	return out, nil
}

// diffTrees lists the effects that turn before into after; opened are the paths inotify
// saw closed after a write-mode open.
func diffTrees(before, after map[string]node, opened map[string]bool) []Effect {
	removedIno := map[uint64]string{}
	presentIno := map[uint64]string{}
	for p, n := range before {
		if _, ok := after[p]; !ok {
			removedIno[n.ino] = p
		} else if n.typ == "file" {
			presentIno[n.ino] = p
		}
	}
	var out []Effect
	renamed := map[string]bool{}
	for _, p := range sortedKeys(after) {
		a := after[p]
		b, ok := before[p]
		e := Effect{Path: p, Type: a.typ, Target: a.target}
		switch {
		case !ok:
			e.Kind = "created"
			if from, ok := removedIno[a.ino]; ok && before[from].typ == a.typ {
				e.Kind, e.From = "renamed", from
				renamed[from] = true
			} else if from, ok := presentIno[a.ino]; ok && a.typ == "file" {
				e.Kind, e.From = "linked", from
			}
		case a.typ != b.typ || a.ino != b.ino:
			e.Kind = "replaced"
		case a.mode != b.mode:
			e.Kind = "mode"
		case a.typ == "dir":
			// A directory's times and size follow its entries, which are compared one by one.
			continue
		case a.size != b.size || a.sum != b.sum || a.mtime != b.mtime || a.target != b.target:
			e.Kind = "modified"
		case a.ctime != b.ctime && a.nlink == b.nlink:
			e.Kind = "metadata"
		case opened[p]:
			e.Kind = "opened_for_writing"
		default:
			continue
		}
		out = append(out, e)
	}
	for _, p := range sortedKeys(before) {
		if _, ok := after[p]; !ok && !renamed[p] {
			out = append(out, Effect{Path: p, Kind: "removed", Type: before[p].typ, Target: before[p].target})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	if len(out) > maxEffects {
		out = out[:maxEffects]
	}
	return out
}

func sortedKeys(m map[string]node) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// watcher reports the files closed after a write-mode open in the directories it
// watches (inotify's IN_CLOSE_WRITE): an open with O_WRONLY, O_RDWR or O_APPEND that
// changed nothing leaves no trace a walk could see.
type watcher struct {
	fd   int
	dirs map[int32]string
}

func newWatcher(tree map[string]node) (*watcher, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	w := &watcher{fd: fd, dirs: map[int32]string{}}
	for p, n := range tree {
		if n.typ != "dir" {
			continue
		}
		wd, err := syscall.InotifyAddWatch(fd, p, syscall.IN_CLOSE_WRITE|syscall.IN_ONLYDIR|syscall.IN_DONT_FOLLOW)
		if err != nil {
			w.close()
			return nil, fmt.Errorf("inotify_add_watch %s: %w", p, err)
		}
		w.dirs[int32(wd)] = p
	}
	return w, nil
}

// drain reads every queued event. A queue overflow is an error: the run's effects would
// be incomplete.
func (w *watcher) drain() (map[string]bool, error) {
	opened := map[string]bool{}
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(w.fd, buf)
		if err == syscall.EAGAIN || n <= 0 {
			return opened, nil
		}
		if err != nil {
			return opened, fmt.Errorf("read inotify: %w", err)
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
			off += syscall.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&syscall.IN_Q_OVERFLOW != 0 {
				return opened, fmt.Errorf("inotify queue overflowed")
			}
			if dir, ok := w.dirs[ev.Wd]; ok && ev.Mask&syscall.IN_CLOSE_WRITE != 0 {
				opened[filepath.Join(dir, string(bytes.TrimRight(name, "\x00")))] = true
			}
		}
	}
}

func (w *watcher) close() { _ = syscall.Close(w.fd) }

// makeTemplate builds the scratch tree once, as root, with the image's real git.
func makeTemplate() error {
	files := map[string]string{
		"ws/a.txt":      "alpha marker\nbeta marker\ngamma marker\ndelta marker\n",
		"ws/b.txt":      "alpha marker\nbeta changed\ngamma marker\n",
		"ws/sub/c.txt":  "marker c\n",
		"ws/prog.awk":   "{ print \"marker\", $0 }\n",
		"ws/write.awk":  "BEGIN { print \"marker\" > \"../out/awk-script\" }\n",
		"ws/write.sed":  "w ../out/sed-script\n",
		"ws/README":     "marker readme\n",
		"out/keep.txt":  "marker outside the workspace\n",
		"home/.keep":    "",
		"ws/.gitignore": "",
	}
	for p, c := range files {
		full := filepath.Join(templateDir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			return err
		}
		if err := os.Chtimes(full, templateTime, templateTime); err != nil {
			return err
		}
	}
	ws := filepath.Join(templateDir, "ws")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		// A copy keeps the files' sizes, modes and mtimes but not their inodes or ctimes:
		// git is told to look only at the former, so that the copy's index is as fresh as
		// the template's and no command that reads the work tree rewrites it.
		{"config", "core.checkStat", "minimal"},
		{"config", "core.trustctime", "false"},
		{"add", "a.txt", "sub", ".gitignore"},
		{"commit", "-q", "-m", "first marker"},
		{"add", "b.txt", "prog.awk", "README"},
		{"commit", "-q", "-m", "second marker"},
		// topic has a commit main lacks: deleting it loses work.
		{"checkout", "-q", "-b", "topic"},
		{"commit", "-q", "--allow-empty", "-m", "topic marker"},
		{"checkout", "-q", "main"},
	} {
		c := exec.Command("/usr/bin/git", args...)
		c.Dir = ws
		c.Env = append(gitEnv(), "HOME="+filepath.Join(templateDir, "home"))
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// gitEnv names the marker identity, so that git never needs one from the system.
func gitEnv() []string {
	return []string{"GIT_AUTHOR_NAME=marker", "GIT_AUTHOR_EMAIL=marker@example.invalid",
		"GIT_COMMITTER_NAME=marker", "GIT_COMMITTER_EMAIL=marker@example.invalid",
		"GIT_AUTHOR_DATE=2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2000-01-01T00:00:00Z",
		"GIT_CONFIG_NOSYSTEM=1"}
}

// templateTime is the scratch tree's files' mtime.
var templateTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// copyTemplate copies the scratch tree to dir, owned by uid.
func copyTemplate(dir string, uid int) error {
	return filepath.WalkDir(templateDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(templateDir, p)
		if rel == "." {
			return nil
		}
		dst := filepath.Join(dir, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(dst, 0o700); err != nil {
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(t, dst); err != nil {
				return err
			}
			return os.Lchown(dst, uid, uid)
		default:
			if err := copyFile(p, dst); err != nil {
				return err
			}
		}
		if err := os.Chown(dst, uid, uid); err != nil {
			return err
		}
		if err := os.Chmod(dst, info.Mode().Perm()); err != nil {
			return err
		}
		// The files' times as in the template; the index a day newer, so that no entry is
		// racy (git re-checks, and rewrites, entries as new as the index itself).
		if rel == filepath.Join("ws", ".git", "index") {
			return os.Chtimes(dst, templateTime.Add(24*time.Hour), templateTime.Add(24*time.Hour))
		}
		return os.Chtimes(dst, templateTime, templateTime)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

// effectsMode is set by the driver's third argument.
var effectsMode bool

// effectShells run the commands in effects mode: the host's own, from its /usr. What a
// program does to files does not depend on the shell that started it; which programs a
// shell starts is the other mode's concern, under all four shells.
var effectShells = []shell{
	{"bash", "/usr/bin/bash", []string{"bash", "-c"}},
	{"dash", "/usr/bin/dash", []string{"dash", "-c"}},
}

// prepare makes a run's directory: ws and home owned by uid, or, in effects mode, a copy
// of the scratch tree.
func prepare(dir string, uid int) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	if effectsMode {
		if err := copyTemplate(dir, uid); err != nil {
			return fmt.Errorf("copy scratch tree: %w", err)
		}
	} else {
		for _, d := range []string{"ws", "home"} {
			if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
				return err
			}
			if err := os.Chown(filepath.Join(dir, d), uid, uid); err != nil {
				return err
			}
		}
	}
	return os.Chmod(dir, 0o711)
}

// runEnv is the environment a run's shell starts with.
func runEnv(res Result) []string {
	e := append([]string{"HOME=" + res.Home, "PWD=" + res.Dir}, env...)
	if effectsMode {
		e = append(e, gitEnv()...)
	}
	return e
}

// effectRecorder records one run's effects: the tree before it, and a watcher.
type effectRecorder struct {
	dir    string
	before map[string]node
	w      *watcher
}

// startEffects takes the tree before the run and starts watching it.
func startEffects(dir string) (*effectRecorder, error) {
	before, err := snapshot(effectRoots)
	if err != nil {
		return nil, err
	}
	w, err := newWatcher(before)
	if err != nil {
		return nil, err
	}
	return &effectRecorder{dir: dir, before: before, w: w}, nil
}

// finish lists the run's effects, once nothing of the run is left, and removes what it
// left outside its directory so that the next run starts from the same tree.
func (r *effectRecorder) finish() ([]Effect, error) {
	opened, werr := r.w.drain()
	after, err := snapshot(effectRoots)
	if err != nil {
		return nil, errors.Join(werr, err)
	}
	effects := diffTrees(r.before, after, opened)
	var rerr error
	for p := range after {
		if _, ok := r.before[p]; ok || p == r.dir || strings.HasPrefix(p, r.dir+"/") {
			continue
		}
		if _, ok := r.before[filepath.Dir(p)]; ok {
			rerr = errors.Join(rerr, os.RemoveAll(p))
		}
	}
	return effects, errors.Join(werr, rerr)
}

func (r *effectRecorder) close() { r.w.close() }
