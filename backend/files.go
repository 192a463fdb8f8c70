package backend

import (
	"context"
	"errors"
	"fmt"
)

// FileOps is implemented by environments whose resident helper reaches files itself (Docker
// and SSH while their helper runs). The helper opens every path by descriptor beneath a root
// directory, refusing any symbolic link on the way (openat2 with RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS), checks the file it opened (fstat: a regular file, its size, one hard
// link) and reads or replaces that same file, so that nothing can be swapped in between the
// check and the use. The file tools discover it by type assertion and prefer it to shell
// scripts, which must look at a path and then open it again.
//
// FileOp returns an error wrapping [ErrNoHelper] when no helper can serve the operation right
// now (the helper is off, or the backend fell back to one command per exec); the caller then
// takes another road and says so. A refusal or a filesystem failure is a [*FileError].
type FileOps interface {
	FileOp(ctx context.Context, req FileRequest) (FileResult, error)
}

// File operations.
const (
	// FileWindow returns lines First..Last of a text file (Last 0: to the end), at most
	// MaxBytes+1 bytes of them, with the file's size and line count; a file whose first 8 KiB
	// hold a NUL byte is reported binary, with no lines.
	FileWindow = "window"
	// FileRead returns the whole file and its SHA-256; a file over MaxBytes is refused with
	// [FileTooLarge].
	FileRead = "read"
	// FileWrite replaces the file with Data atomically (a temporary file in the same
	// directory, fsync, rename by descriptor), keeping the old file's mode; missing parent
	// directories are created. Data over MaxBytes is refused with [FileTooLarge].
	FileWrite = "write"
	// FileSearch walks Path (a directory or one file) beneath Root by descriptor, never
	// following a symbolic link, skipping directories named ".git" or matching DenyNames,
	// non-regular files, files with more than one hard link and files whose first 8 KiB hold
	// a NUL byte; each file is read through the descriptor it was opened with. Pattern is a
	// Go regular expression matched line by line (Data: "path\x00line:text\n" per match),
	// or with FilesOnly a shell glob matched against file names (a substring when it has no
	// glob character; Data: "path\n"). Glob, when set, selects the file names searched. At
	// most MaxResults lines and MaxBytes bytes are returned; Lines is how many.
	FileSearch = "search"
)

// FileRequest is one file operation. Path is absolute and clean and, like every path the file
// tools use, the one the path policy resolved: it has no symbolic link in it.
type FileRequest struct {
	Op   string
	Path string
	// Root is the directory the path is opened beneath (the workspace, or "/" for a path
	// outside it); empty means "/". It must contain Path.
	Root string
	// First and Last bound a window (1-based, inclusive; Last 0 means to the end).
	First, Last int
	// MaxBytes bounds what a read returns or a write may write.
	MaxBytes int64
	// Data is what a write writes.
	Data []byte
	// ExpectSHA256, for a write, is the hex SHA-256 the existing file must still have (what
	// a patch read); another content is refused with [FileStale]. Empty means no check.
	ExpectSHA256 string
	// MinFreeBytes, for a write, is the free space the write must leave on the target's
	// filesystem; a write that would leave less is refused with [FileTooLarge]. Zero: no
	// check.
	MinFreeBytes int64
	// Pattern, Glob, FilesOnly, MaxResults and DenyNames describe a search ([FileSearch]).
	Pattern    string
	Glob       string
	FilesOnly  bool
	MaxResults int
	DenyNames  []string
}

// FileResult is what a file operation returned.
type FileResult struct {
	// Data is the window's lines or the file's bytes.
	Data []byte
	// Size is the file's size in bytes; Lines its line count (window).
	Size  int64
	Lines int
	// Binary: the file's head holds a NUL byte (window; Data is then empty).
	Binary bool
	// SHA256 is the hex digest of the whole file read (read).
	SHA256 string
	// Created: the write made a new file rather than replacing one.
	Created bool
}

// Codes of a [FileError].
const (
	FileNotFound   = "not_found"
	FileSymlink    = "symlink"     // a component of the path is a symbolic link
	FileNotRegular = "not_regular" // a directory, a device, a FIFO
	FileNotDir     = "not_dir"     // a parent is not a directory
	FileHardLink   = "hard_link"   // the file has more than one name
	FileTooLarge   = "too_large"
	FileStale      = "stale" // the file changed since it was read
	FileIO         = "io"
	FileInvalid    = "invalid" // the request itself is malformed
	// FilePermission: the helper's user (the commands' user) may not; Msg names the uid.
	FilePermission = "permission"
)

// FileError is a refused or failed file operation; Code is one of the File* codes.
type FileError struct {
	Code string
	Msg  string
}

func (e *FileError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Msg) }

// ErrNoHelper means no resident helper can serve a file operation right now.
var ErrNoHelper = errors.New("no resident helper serves file operations")
