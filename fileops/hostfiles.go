package fileops

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/session"
)

// hostFiles reaches files beneath a host directory through os.Root. The file's directory is
// opened one component at a time, from the workspace (or, for a directory outside it, from
// "/"), each one relative to the handle of its parent: a component that is a symbolic link
// is refused, and the directory opened must be the one Lstat saw. Nothing re-walks a path of
// several components, so a link swapped in on the way after policy looked, or while the
// walk runs, is refused, and what the call opens next is looked up in the directory handle
// it holds, not by a name that a rename could have redirected.
type hostFiles struct{ dir string }

// parent opens p's directory as a root and returns it with p's name. With create set,
// missing directories are made one at a time. p is the policy's resolved path, which has no
// symbolic link in it; the walk checks that this still holds.
func (h hostFiles) parent(p string, create bool) (*os.Root, string, error) {
	p = filepath.Clean(p)
	dir, base := filepath.Dir(p), filepath.Base(p)
	// The workspace is canonical (its own links resolved when the environment was made);
	// a root configured outside it is walked from the top, every component checked.
	start := string(filepath.Separator)
	if backend.Within(h.dir, dir) {
		start = h.dir
	}
	rel, err := filepath.Rel(start, dir)
	if err != nil {
		return nil, "", fmt.Errorf("fileops: %w", err)
	}
	cur, err := os.OpenRoot(start)
	if err != nil {
		return nil, "", mapErr(err)
	}
	for _, c := range strings.Split(rel, string(filepath.Separator)) {
		if c == "." || c == "" {
			continue
		}
		sub, err := openDir(cur, c, create)
		_ = cur.Close()
		if err != nil {
			return nil, "", err
		}
		cur = sub
	}
	return cur, base, nil
}

// openDir opens the directory name directly beneath parent, creating it first if asked. It
// refuses a link, and refuses when what it opened is not what Lstat saw (a link or another
// directory renamed into place in between).
func openDir(parent *os.Root, name string, create bool) (*os.Root, error) {
	fi, err := parent.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := parent.Mkdir(name, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, mapErr(err)
		}
		fi, err = parent.Lstat(name)
	}
	switch {
	case err != nil:
		return nil, mapErr(err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, fsErr(pathpolicy.CodeSymlinkEscape, "a parent directory is a symbolic link")
	case !fi.IsDir():
		return nil, fsErr(CodeNotDirectory, "a parent is not a directory")
	}
	sub, err := parent.OpenRoot(name)
	if err != nil {
		return nil, mapErr(err)
	}
	opened, err := sub.Stat(".")
	if err != nil || !os.SameFile(fi, opened) {
		_ = sub.Close()
		return nil, fsErr(pathpolicy.CodeSymlinkEscape, "a parent directory changed while it was opened")
	}
	return sub, nil
}

// lstat looks at the target without following it.
func lstat(root *os.Root, rel string) (fs.FileInfo, error) {
	fi, err := root.Lstat(rel)
	if err != nil {
		return nil, mapErr(err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fsErr(pathpolicy.CodeSymlinkEscape, "became a symbolic link")
	}
	if !fi.Mode().IsRegular() {
		return nil, fsErr(CodeNotRegular, "not a regular file")
	}
	return fi, nil
}

// openChecked opens the regular file rel and makes sure the file opened is the one lstat
// saw, so that a link swapped in between is caught.
func openChecked(root *os.Root, rel string) (*os.File, fs.FileInfo, error) {
	before, err := lstat(root, rel)
	if err != nil {
		return nil, nil, err
	}
	f, err := root.Open(rel)
	if err != nil {
		return nil, nil, mapErr(err)
	}
	after, err := f.Stat()
	if err != nil || !os.SameFile(before, after) {
		_ = f.Close()
		return nil, nil, fsErr(pathpolicy.CodeSymlinkEscape, "changed while it was opened")
	}
	// The link count of the file opened, not of a name looked at earlier: a hard link made
	// after the policy's check is refused here.
	if n := linkCount(after); n > 1 {
		_ = f.Close()
		return nil, nil, fsErr(pathpolicy.CodeForbiddenPath, "has %d hard links", n)
	}
	return f, after, nil
}

func (h hostFiles) window(_ context.Context, p string, first, last int, max int64) (window, error) {
	root, rel, err := h.parent(p, false)
	if err != nil {
		return window{}, err
	}
	defer root.Close()
	f, fi, err := openChecked(root, rel)
	if err != nil {
		return window{}, err
	}
	defer f.Close()
	lines, err := backend.ReadLines(f, fi.Size(), first, last, max)
	if err != nil {
		return window{}, mapErr(err)
	}
	return window{size: fi.Size(), binary: lines.Binary, data: lines.Data, total: lines.Total, sha256: lines.SHA256}, nil
}

func (h hostFiles) readAll(_ context.Context, p string, max int64) ([]byte, error) {
	root, rel, err := h.parent(p, false)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, fi, err := openChecked(root, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > max {
		return nil, tooLarge(fi.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, mapErr(err)
	}
	if int64(len(data)) > max {
		return nil, tooLarge(int64(len(data)), max)
	}
	return data, nil
}

func (h hostFiles) notes() []string { return nil }

func (h hostFiles) write(_ context.Context, p string, data []byte, expect string) (bool, error) {
	root, rel, err := h.parent(p, true)
	if err != nil {
		return false, err
	}
	defer root.Close()
	perm, created := fs.FileMode(0o666), true
	if fi, err := lstat(root, rel); err == nil {
		if n := linkCount(fi); n > 1 {
			return false, fsErr(pathpolicy.CodeForbiddenPath, "has %d hard links", n)
		}
		perm, created = fi.Mode().Perm(), false
		if expect != "" {
			if err := sameContent(root, rel, expect); err != nil {
				return false, err
			}
		}
	} else if expect != "" {
		return false, fsErr(session.CodeStaleFile, "the file was removed since it was read")
	} else if fe := (*fsError)(nil); !errors.As(err, &fe) || fe.code != pathpolicy.CodeNotFound {
		return false, err
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := ".airlock-" + hex.EncodeToString(rnd[:]) + ".tmp"
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return false, mapErr(err)
	}
	_, werr := f.Write(data)
	if werr == nil && !created {
		werr = f.Chmod(perm) // the umask may have narrowed it
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = root.Rename(tmp, rel)
	}
	if werr != nil {
		_ = root.Remove(tmp)
		return false, mapErr(werr)
	}
	return created, nil
}

// sameContent refuses, as stale, a file whose SHA-256 is no longer expect.
func sameContent(root *os.Root, rel, expect string) error {
	f, _, err := openChecked(root, rel)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return mapErr(err)
	}
	if hex.EncodeToString(h.Sum(nil)) != expect {
		return fsErr(session.CodeStaleFile, "the file changed since it was read")
	}
	return nil
}

func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// mapErr turns an os error into an fsError the model can act on.
func mapErr(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fsErr(pathpolicy.CodeNotFound, "no such file")
	case errors.Is(err, syscall.ENOTDIR):
		return fsErr(CodeNotDirectory, "a parent is not a directory")
	case errors.Is(err, syscall.EISDIR):
		return fsErr(CodeNotRegular, "is a directory")
	case errors.Is(err, syscall.ELOOP), isEscape(err):
		return fsErr(pathpolicy.CodeSymlinkEscape, "a symbolic link leads out of the allowed directory")
	case errors.Is(err, fs.ErrPermission):
		return permissionDenied(fmt.Sprintf("uid %d", os.Getuid()))
	}
	return fsErr(CodeIOError, "%s", err.Error())
}

// isEscape recognises os.Root's refusal of a path that leaves the root. The os package keeps
// that error unexported, so its text is the only handle on it.
func isEscape(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent"
}
