package backend

import (
	"context"
	"os"
	"path"
	"strings"
	"syscall"
)

// PathResolver is implemented by environments whose resident helper resolves the path
// policy's paths where commands run, natively (the local backend): one message instead of a
// shell script and the processes it starts. Each path is absolute and clean; the answers
// are in the same order.
type PathResolver interface {
	ResolvePaths(ctx context.Context, paths []string) ([]ResolvedPath, error)
}

// FileResolve asks a helper to resolve the paths in Data (NUL-separated) with
// [ResolvePaths]; the answer's Data is their encoded form (helper.DecodeResolved reads it).
const FileResolve = "resolve"

// ResolvedPath is what resolving one path found, field for field what the path policy's
// shell resolver prints.
type ResolvedPath struct {
	Real    string `json:"real"`
	Exists  bool   `json:"exists,omitempty"`
	Kind    string `json:"kind,omitempty"` // "f", "d", "o", or "" when it does not exist
	Link    bool   `json:"link,omitempty"` // the path's last component is a symbolic link
	ViaLink bool   `json:"via_link,omitempty"`
	Loop    bool   `json:"loop,omitempty"`
	DotDot  bool   `json:"dotdot,omitempty"` // ".." below a missing component or a file
	Links   int    `json:"links,omitempty"`
	Size    int64  `json:"size,omitempty"`
}

// maxHops bounds how many symbolic links one resolution follows, as the kernel's own limit
// does; more means a loop.
const maxHops = 40

// ResolvePaths resolves each absolute path of paths: it follows every existing symbolic
// link one component at a time from the root, as the kernel would, taking relative targets
// from the link's directory; a path that does not exist resolves through its deepest
// existing parent. Each name is looked at (lstat) once for all of paths: the workspace, the
// roots and the files a call names share most of their components, and they are resolved
// as one view of the filesystem, as if at one moment.
func ResolvePaths(paths []string) []ResolvedPath {
	w := walker{seen: map[string]lstatAnswer{}}
	out := make([]ResolvedPath, len(paths))
	for i, p := range paths {
		out[i] = w.resolve(p)
	}
	return out
}

// walker resolves paths, keeping what lstat said of each name.
type walker struct{ seen map[string]lstatAnswer }

type lstatAnswer struct {
	fi  os.FileInfo
	err error
}

func (w walker) lstat(name string) (os.FileInfo, error) {
	a, ok := w.seen[name]
	if !ok {
		a.fi, a.err = os.Lstat(name)
		w.seen[name] = a
	}
	return a.fi, a.err
}

// resolve resolves one absolute path (see ResolvePaths).
func (w walker) resolve(p string) ResolvedPath {
	todo := strings.TrimPrefix(p, "/")
	r, hops, via, missing := "", 0, false, false
	out := ResolvedPath{}
	for todo != "" {
		c := todo
		if i := strings.IndexByte(todo, '/'); i >= 0 {
			c, todo = todo[:i], todo[i+1:]
		} else {
			todo = ""
		}
		switch c {
		case "", ".":
			continue
		case "..":
			if fi, err := os.Stat(orRoot(r)); missing || err != nil || !fi.IsDir() {
				out.DotDot = true
				return w.finish(out, r, via, p)
			}
			r = path.Dir(orRoot(r))
			if r == "/" {
				r = ""
			}
			continue
		}
		if missing {
			r += "/" + c
			continue
		}
		next := r + "/" + c
		fi, err := w.lstat(next)
		switch {
		case err == nil && fi.Mode()&os.ModeSymlink != 0:
			hops++
			via = true
			t, err := os.Readlink(next)
			if hops > maxHops || err != nil || t == "" {
				out.Loop = true
				return w.finish(out, r, via, p)
			}
			if strings.HasPrefix(t, "/") {
				r = ""
			}
			t = strings.TrimPrefix(t, "/")
			if todo != "" {
				todo = t + "/" + todo
			} else {
				todo = t
			}
		case err == nil:
			r = next
		default:
			missing, r = true, next
		}
	}
	if !missing {
		// Every component of r was looked at and none was a link: lstat says what stat
		// would.
		if fi, err := w.lstat(orRoot(r)); err == nil {
			out.Exists = true
			switch {
			case fi.IsDir():
				out.Kind = "d"
			case fi.Mode().IsRegular():
				out.Kind = "f"
				out.Size = fi.Size()
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					out.Links = int(st.Nlink)
				}
			default:
				out.Kind = "o"
			}
		}
	}
	return w.finish(out, r, via, p)
}

func (w walker) finish(out ResolvedPath, r string, via bool, p string) ResolvedPath {
	out.Real, out.ViaLink = path.Clean(orRoot(r)), via
	if fi, err := w.lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		out.Link = true
	}
	if out.Loop || out.DotDot {
		out.Exists, out.Kind = false, ""
	}
	return out
}

func orRoot(r string) string {
	if r == "" {
		return "/"
	}
	return r
}
