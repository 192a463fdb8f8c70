package helper

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/backend"
)

// The helper's file operations. Every path is opened by descriptor: the file's directory
// with openat2 from "/" (the root, when a missing directory is made, then each directory
// below it from its parent), the file beneath its directory, each with RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, so that a symbolic link in any component,
// planted before or during the call, makes the open fail instead of leading elsewhere. The
// paths are clean and absolute, so with no link followed and no ".." in them, the directory
// reached from "/" is the one reached from the root beneath it. Where the kernel has no
// openat2 (before Linux 5.6) the same walk is done one component at a time with openat and
// O_NOFOLLOW, which refuses a link in every component just as well. What is checked (fstat:
// a regular file, its size, its link count) is the open file that is then read; a write
// goes to a temporary file created in the directory's descriptor and renamed over the name
// in that same descriptor.

// noOpenat2 is set once openat2 turned out to be missing, so later calls go straight to the
// component walk.
var noOpenat2 atomic.Bool

const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

func fileErr(code, format string, a ...any) error {
	return &backend.FileError{Code: code, Msg: fmt.Sprintf(format, a...)}
}

// mapErrno turns a failed open or rename into a FileError. ELOOP is what openat2 reports for
// a link it refused, and O_NOFOLLOW for a link as the last component.
func mapErrno(err error, what string) error {
	var fe *backend.FileError
	if errors.As(err, &fe) {
		return err
	}
	switch {
	case errors.Is(err, unix.ENOENT):
		return fileErr(backend.FileNotFound, "%s: no such file or directory", what)
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return fileErr(backend.FileSymlink, "%s: a component is a symbolic link", what)
	case errors.Is(err, unix.ENOTDIR):
		return fileErr(backend.FileNotDir, "%s: a parent is not a directory", what)
	case errors.Is(err, unix.EISDIR):
		return fileErr(backend.FileNotRegular, "%s: is a directory", what)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM), errors.Is(err, unix.EROFS):
		// The effective user: a helper that runs commands as their user (RunAs) keeps root as
		// its real one, and what was refused was the commands' user.
		uid := strconv.Itoa(os.Geteuid())
		u := "uid " + uid
		if who, err := user.LookupId(uid); err == nil && who.Username != "" {
			u += " (" + who.Username + ")"
		}
		return fileErr(backend.FilePermission, "%s", u)
	case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.EDQUOT):
		return fileErr(backend.FileTooLarge, "%s: no space left on the filesystem: %v", what, err)
	}
	return fileErr(backend.FileIO, "%s: %v", what, err)
}

// openBeneath opens rel (relative, clean, "" for dirfd itself) beneath dirfd with flags,
// refusing every symbolic link on the way.
func openBeneath(dirfd int, rel string, flags int, mode uint32) (int, error) {
	if rel == "" || rel == "." {
		rel = "."
	}
	flags |= unix.O_CLOEXEC
	if !noOpenat2.Load() {
		fd, err := unix.Openat2(dirfd, rel, &unix.OpenHow{Flags: uint64(flags), Mode: uint64(mode), Resolve: resolveFlags})
		if !errors.Is(err, unix.ENOSYS) {
			return fd, err
		}
		noOpenat2.Store(true)
	}
	return walkOpen(dirfd, rel, flags, mode)
}

// walkOpen is openBeneath without openat2: each directory is opened with O_NOFOLLOW, the
// last component too, and ".." is refused (paths here are clean, so it only comes from a
// caller's mistake).
func walkOpen(dirfd int, rel string, flags int, mode uint32) (int, error) {
	parts := strings.Split(rel, "/")
	cur, err := unix.Openat(dirfd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for i, c := range parts {
		if c == ".." {
			unix.Close(cur)
			return -1, unix.EXDEV
		}
		if c == "." || c == "" {
			if i == len(parts)-1 {
				next, err := unix.Openat(cur, ".", flags, mode)
				unix.Close(cur)
				return next, err
			}
			continue
		}
		f := unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i == len(parts)-1 {
			f = flags | unix.O_NOFOLLOW
		}
		next, err := unix.Openat(cur, c, f, mode)
		if errors.Is(err, unix.ENOTDIR) && isLink(cur, c) {
			err = unix.ELOOP
		}
		unix.Close(cur)
		if err != nil {
			return -1, err
		}
		cur = next
	}
	return cur, nil
}

func isLink(dirfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// openDir opens the directory of an absolute, clean path beneath root (absolute, clean,
// containing p) and returns its descriptor and p's last component. With create set, missing
// directories below the deepest existing one are made one at a time, each opened by
// descriptor from its parent, none of them world-writable.
func openDir(root, p string, create bool) (int, string, error) {
	if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
		return -1, "", fileErr(backend.FileInvalid, "path %q is not an absolute, clean file path", p)
	}
	if root == "" {
		root = "/"
	}
	if !path.IsAbs(root) || path.Clean(root) != root || !backend.Within(root, p) || root == p {
		return -1, "", fileErr(backend.FileInvalid, "path %q does not lie beneath root %q", p, root)
	}
	slash, err := slashFD()
	if err != nil {
		return -1, "", mapErrno(err, "/")
	}
	dir, base := path.Split(p)
	dir = path.Clean(dir)
	dfd, err := openBeneath(slash, strings.TrimPrefix(dir, "/"), unix.O_PATH|unix.O_DIRECTORY, 0)
	if err == nil {
		return dfd, base, nil
	}
	if !create || !errors.Is(err, unix.ENOENT) {
		return -1, "", mapErrno(err, dir)
	}
	// Make what is missing, one component at a time from the root's descriptor.
	cur, err := openBeneath(slash, strings.TrimPrefix(root, "/"), unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, "", mapErrno(err, root)
	}
	rel := strings.Trim(strings.TrimPrefix(dir, root), "/")
	for _, c := range strings.Split(rel, "/") {
		next, err := openBeneath(cur, c, unix.O_PATH|unix.O_DIRECTORY, 0)
		if errors.Is(err, unix.ENOENT) {
			if err := mkdirPrivate(cur, c); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(cur)
				return -1, "", mapErrno(err, c)
			}
			next, err = openBeneath(cur, c, unix.O_PATH|unix.O_DIRECTORY, 0)
		}
		unix.Close(cur)
		if err != nil {
			return -1, "", mapErrno(err, c)
		}
		cur = next
	}
	return cur, base, nil
}

// slashFD is a descriptor of "/", opened once: the helper's root is made before it serves
// (sandbox.Namespace.Enter) and does not change after.
var slashFD = sync.OnceValues(func() (int, error) {
	return unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
})

// mkdirPrivate makes a directory with the umask's mode, never writable by others.
func mkdirPrivate(dirfd int, name string) error {
	if err := unix.Mkdirat(dirfd, name, 0o777); err != nil {
		return err
	}
	fd, err := openBeneath(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&0o002 != 0 {
		return unix.Fchmod(fd, st.Mode&0o7777&^0o002)
	}
	return nil
}

// openRegular opens name beneath dirfd for reading and checks the open file: a regular
// file with one hard link. A FIFO or device is not waited on (O_NONBLOCK; the flag does
// nothing to a regular file).
func openRegular(dirfd int, name string) (*regular, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := openBeneath(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, st, mapErrno(err, name)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, st, mapErrno(err, name)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, st, fileErr(backend.FileNotRegular, "%s: not a regular file", name)
	}
	if st.Nlink > 1 {
		unix.Close(fd)
		return nil, st, fileErr(backend.FileHardLink, "%s: has %d hard links, whose other names may lie outside the allowed directories", name, st.Nlink)
	}
	return &regular{fd: fd, name: name}, st, nil
}

// regular is an open regular file, read with read(2) on the calling thread. An *os.File
// would cost two system calls more to make (it asks for the descriptor's flags and, finding
// it non-blocking, offers it to the network poller, which refuses a regular file), and a
// regular file's read never waits on anything a poller could.
type regular struct {
	fd   int
	name string
}

func (r *regular) Read(p []byte) (int, error) { return readFD(r.fd, p, r.name, nil) }

// Close closes the descriptor once.
func (r *regular) Close() error {
	if r.fd < 0 {
		return os.ErrClosed
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}

// fileWindow serves backend.FileWindow.
func fileWindow(req backend.FileRequest) (backend.FileResult, error) {
	f, st, err := openTarget(req)
	return readOpened(req, f, st, err)
}

// fileRead serves backend.FileRead.
func fileRead(req backend.FileRequest) (backend.FileResult, error) {
	f, st, err := openTarget(req)
	return readOpened(req, f, st, err)
}

// openTarget opens the regular file a read or a window reads.
func openTarget(req backend.FileRequest) (*regular, unix.Stat_t, error) {
	dfd, base, err := openDir(req.Root, req.Path, false)
	if err != nil {
		return nil, unix.Stat_t{}, err
	}
	defer unix.Close(dfd)
	return openRegular(dfd, base)
}

// readOpened ends a read or a window (req.Op) on the file openTarget opened, or with the
// error it gave; it closes the file.
func readOpened(req backend.FileRequest, f *regular, st unix.Stat_t, err error) (backend.FileResult, error) {
	if err != nil {
		return backend.FileResult{}, err
	}
	defer f.Close()
	if req.Op == backend.FileWindow {
		lines, err := backend.ReadLines(f, st.Size, req.First, req.Last, req.MaxBytes)
		if err != nil {
			return backend.FileResult{}, mapErrno(err, f.name)
		}
		return backend.FileResult{Size: st.Size, Binary: lines.Binary, Data: lines.Data, Lines: lines.Total, SHA256: lines.SHA256}, nil
	}
	data, err := readLimited(f, st, req.MaxBytes, f.name)
	if err != nil {
		return backend.FileResult{}, err
	}
	sum := sha256.Sum256(data)
	return backend.FileResult{Data: data, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}, nil
}

func readLimited(f *regular, st unix.Stat_t, max int64, name string) ([]byte, error) {
	if st.Size > max {
		return nil, fileErr(backend.FileTooLarge, "the file is %d bytes, over the limit of %d", st.Size, max)
	}
	// Sized from the open file, with a byte to spare so that the read that finds its end
	// needs no larger buffer; a file that grew meanwhile grows it, up to max+1 bytes.
	data := make([]byte, 0, st.Size+1)
	for int64(len(data)) <= max {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		free := data[len(data):min(int64(cap(data)), max+1)]
		n, err := f.Read(free)
		data = data[:len(data)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, mapErrno(err, name)
		}
	}
	if int64(len(data)) > max {
		return nil, fileErr(backend.FileTooLarge, "the file is over the limit of %d bytes", max)
	}
	return data, nil
}

// fileWrite serves backend.FileWrite.
func fileWrite(req backend.FileRequest) (backend.FileResult, error) {
	if int64(len(req.Data)) > req.MaxBytes {
		return backend.FileResult{}, fileErr(backend.FileTooLarge, "%d bytes to write, over the limit of %d", len(req.Data), req.MaxBytes)
	}
	dfd, base, err := openDir(req.Root, req.Path, true)
	if err != nil {
		return backend.FileResult{}, err
	}
	defer unix.Close(dfd)
	created, perm, err := replaced(dfd, base, req)
	if err != nil {
		return backend.FileResult{}, err
	}
	if req.MinFreeBytes > 0 {
		if err := roomFor(dfd, int64(len(req.Data)), req.MinFreeBytes); err != nil {
			return backend.FileResult{}, err
		}
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := ".airlock-" + hex.EncodeToString(rnd[:]) + ".tmp"
	// Created with 0666 so the kernel applies the helper's umask, as for a file a command
	// creates; the mode is then set from the old file, or cleared of world-write.
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o666)
	if err != nil {
		return backend.FileResult{}, mapErrno(err, tmp)
	}
	f := os.NewFile(uintptr(fd), tmp)
	werr := func() error {
		if _, err := f.Write(req.Data); err != nil {
			return err
		}
		if created {
			var tst unix.Stat_t
			if err := unix.Fstat(fd, &tst); err != nil {
				return err
			}
			perm = tst.Mode & 0o7777 &^ 0o002
		}
		if err := unix.Fchmod(fd, perm); err != nil {
			return err
		}
		return f.Sync()
	}()
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(dfd, tmp, dfd, base)
	}
	if werr != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return backend.FileResult{}, mapErrno(werr, base)
	}
	// The rename is durable once the directory is.
	if d, err := unix.Openat(dfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		_ = unix.Fsync(d)
		unix.Close(d)
	}
	return backend.FileResult{Created: created, Size: int64(len(req.Data))}, nil
}

// replaced looks at the file a write of req replaces, base in the directory dfd holds,
// through a descriptor of its own: whether there is none (created) and its mode, which the
// write keeps (perm). A second hard link refuses the write (the other names would keep the
// old content, which a caller would not expect), and a patch's digest is compared with
// what is there now.
func replaced(dfd int, base string, req backend.FileRequest) (created bool, perm uint32, err error) {
	created = true
	old, st, err := openRegular(dfd, base)
	switch {
	case err == nil:
		created, perm = false, st.Mode&0o7777
		if req.ExpectSHA256 != "" {
			data, rerr := readLimited(old, st, max(req.MaxBytes, st.Size), base)
			if rerr != nil {
				old.Close()
				return false, 0, rerr
			}
			if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != req.ExpectSHA256 {
				old.Close()
				return false, 0, fileErr(backend.FileStale, "%s changed since it was read", base)
			}
		}
		old.Close()
	case isCode(err, backend.FileNotFound):
		if req.ExpectSHA256 != "" {
			return false, 0, fileErr(backend.FileStale, "%s was removed since it was read", base)
		}
	default:
		return false, 0, err
	}
	return created, perm, nil
}

// roomFor refuses a write of n bytes that would leave less than minFree bytes free to
// unprivileged users on the filesystem of the directory dfd holds.
func roomFor(dfd int, n, minFree int64) error {
	var st unix.Statfs_t
	if err := unix.Fstatfs(dfd, &st); err != nil {
		return mapErrno(err, "statfs")
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if free-n < minFree {
		return fileErr(backend.FileTooLarge, "the filesystem has %d bytes free; writing %d bytes would leave less than the %d it must keep free (workspace_min_free)", free, n, minFree)
	}
	return nil
}

func isCode(err error, code string) bool {
	var fe *backend.FileError
	return errors.As(err, &fe) && fe.Code == code
}

// fileOp runs one operation.
func fileOp(req backend.FileRequest) (backend.FileResult, error) {
	switch req.Op {
	case backend.FileWindow:
		return fileWindow(req)
	case backend.FileRead:
		return fileRead(req)
	case backend.FileWrite:
		return fileWrite(req)
	case backend.FileSearch:
		return fileSearch(req)
	case backend.FileResolve:
		return fileResolve(req)
	}
	return backend.FileResult{}, fileErr(backend.FileInvalid, "unknown file operation %q", req.Op)
}

// fileResolve resolves the NUL-separated absolute paths in req.Data where the helper runs
// (see [backend.ResolvePaths]) and answers with their JSON array.
func fileResolve(req backend.FileRequest) (backend.FileResult, error) {
	paths := strings.Split(string(req.Data), "\x00")
	for _, p := range paths {
		if !strings.HasPrefix(p, "/") {
			return backend.FileResult{}, fileErr(backend.FileInvalid, "path %q is not absolute", p)
		}
	}
	return backend.FileResult{Data: encodeResolved(backend.ResolvePaths(paths))}, nil
}
