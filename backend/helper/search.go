package helper

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/backend"
)

// searchLineBytes bounds the text sent of one matching line; the file tools cut it to 500
// characters, which never take more than this.
const searchLineBytes = 2048

// searcher is one backend.FileSearch walk.
type searcher struct {
	req      backend.FileRequest
	re       *regexp.Regexp
	out      bytes.Buffer
	lines    int
	deadline time.Time
}

var errSearchFull = errors.New("search: enough results")

// fileSearch serves backend.FileSearch. The path is opened beneath the root as every other
// operation's is; each directory beneath it is opened from its parent's descriptor with
// openBeneath (no symbolic link), each file with openRegular (a regular file, one link) and
// read through that descriptor, so that a name swapped for a link while the walk runs is
// refused, not followed.
func fileSearch(req backend.FileRequest) (backend.FileResult, error) {
	s := &searcher{req: req, deadline: time.Now().Add(backend.FileOpTimeout)}
	if !req.FilesOnly {
		re, err := regexp.Compile(req.Pattern)
		if err != nil {
			return backend.FileResult{}, fileErr(backend.FileInvalid, "regex parse error: %v", err)
		}
		s.re = re
	} else if _, err := path.Match(req.Pattern, ""); err != nil {
		return backend.FileResult{}, fileErr(backend.FileInvalid, "bad name pattern %q: %v", req.Pattern, err)
	}
	if req.Glob != "" {
		if _, err := path.Match(req.Glob, ""); err != nil {
			return backend.FileResult{}, fileErr(backend.FileInvalid, "bad glob %q: %v", req.Glob, err)
		}
	}
	p := req.Path
	root := req.Root
	if root == "" {
		root = "/"
	}
	if !path.IsAbs(p) || path.Clean(p) != p || !path.IsAbs(root) || path.Clean(root) != root || !backend.Within(root, p) {
		return backend.FileResult{}, fileErr(backend.FileInvalid, "path %q does not lie beneath root %q", p, root)
	}
	slash, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return backend.FileResult{}, mapErrno(err, "/")
	}
	rfd, err := openBeneath(slash, strings.TrimPrefix(root, "/"), unix.O_PATH|unix.O_DIRECTORY, 0)
	unix.Close(slash)
	if err != nil {
		return backend.FileResult{}, mapErrno(err, root)
	}
	defer unix.Close(rfd)
	rel := strings.Trim(strings.TrimPrefix(p, root), "/")
	if p == root {
		rel = ""
	}
	// A directory is walked; anything else is searched as the one file it is.
	dfd, err := openBeneath(rfd, rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	switch {
	case err == nil:
		err = s.walk(dfd, p)
		unix.Close(dfd)
	case errors.Is(err, unix.ENOTDIR) && rel != "":
		dir, base := path.Split(rel)
		var pfd int
		if pfd, err = openBeneath(rfd, strings.TrimSuffix(dir, "/"), unix.O_PATH|unix.O_DIRECTORY, 0); err == nil {
			err = s.file(pfd, base, p)
			unix.Close(pfd)
		}
	}
	if err != nil && !errors.Is(err, errSearchFull) {
		return backend.FileResult{}, mapErrno(err, p)
	}
	return backend.FileResult{Data: s.out.Bytes(), Lines: s.lines, Size: int64(s.out.Len())}, nil
}

// pruned reports whether a name found in the walk is left out: ".git" and the deny names,
// as the shell road's find prunes them (-iname for a name, -ipath "*/name" for one with a
// slash).
func (s *searcher) pruned(name, full string) bool {
	if name == ".git" {
		return true
	}
	lname, lfull := strings.ToLower(name), strings.ToLower(full)
	for _, n := range s.req.DenyNames {
		n = strings.ToLower(strings.Trim(n, "/"))
		if n == "" {
			continue
		}
		if !strings.Contains(n, "/") {
			if ok, _ := path.Match(n, lname); ok {
				return true
			}
			continue
		}
		// Every tail of the path that starts after a slash.
		for i := 0; i < len(lfull); i++ {
			if lfull[i] == '/' {
				if ok, _ := path.Match(n, lfull[i+1:]); ok {
					return true
				}
			}
		}
	}
	return false
}

// walk searches the directory dfd (opened for reading) holds, whose path is dir.
func (s *searcher) walk(dfd int, dir string) error {
	if time.Now().After(s.deadline) {
		return fileErr(backend.FileIO, "the search did not finish within %s", backend.FileOpTimeout)
	}
	// ReadDir reads through a duplicate, so that dfd stays usable for opening the entries.
	dup, err := unix.Dup(dfd)
	if err != nil {
		return err
	}
	d := os.NewFile(uintptr(dup), dir)
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil && len(entries) == 0 {
		return nil // an unreadable directory is left out, as find goes on past one
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		name := e.Name()
		full := path.Join(dir, name)
		if s.pruned(name, full) {
			continue
		}
		switch t := e.Type(); {
		case t&os.ModeSymlink != 0:
			continue // never followed, as find -type f never selects one
		case t.IsDir():
			cfd, err := openBeneath(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
			if err != nil {
				continue // swapped for a link, removed, or unreadable
			}
			err = s.walk(cfd, full)
			unix.Close(cfd)
			if err != nil {
				return err
			}
		case t.IsRegular():
			if err := s.file(dfd, name, full); err != nil {
				return err
			}
		}
	}
	return nil
}

// file searches one file beneath dfd; a name that is no longer one regular, singly linked
// file when it is opened is skipped.
func (s *searcher) file(dfd int, name, full string) error {
	if s.req.Glob != "" {
		if ok, _ := path.Match(s.req.Glob, name); !ok {
			return nil
		}
	}
	if s.re == nil {
		pat := s.req.Pattern
		if !strings.ContainsAny(pat, "*?[") {
			pat = "*" + pat + "*"
		}
		if ok, _ := path.Match(pat, name); !ok {
			return nil
		}
		// Only what find -type f -links 1 would list.
		f, _, err := openRegular(dfd, name)
		if err != nil {
			return nil
		}
		f.Close()
		return s.emit([]byte(full + "\n"))
	}
	f, _, err := openRegular(dfd, name)
	if err != nil {
		return nil
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	if head, _ := br.Peek(backend.BinaryProbe); bytes.IndexByte(head, 0) >= 0 {
		return nil // a binary file, which ripgrep leaves out too
	}
	var line []byte
	n := 0
	for {
		chunk, err := br.ReadSlice('\n')
		// A line longer than the buffer arrives in pieces; only its first piece (cut) and
		// the match over what is kept count.
		if len(line) < 1<<20 {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(line) > 0 {
			n++
			text := bytes.TrimSuffix(line, []byte("\n"))
			if s.re.Match(text) {
				if len(text) > searchLineBytes {
					text = text[:searchLineBytes]
				}
				rec := make([]byte, 0, len(full)+len(text)+16)
				rec = append(rec, full...)
				rec = append(rec, 0)
				rec = strconv.AppendInt(rec, int64(n), 10)
				rec = append(rec, ':')
				rec = append(rec, bytes.ReplaceAll(text, []byte("\n"), nil)...)
				rec = append(rec, '\n')
				if err := s.emit(rec); err != nil {
					return err
				}
			}
			line = line[:0]
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return nil // a read error ends this file only
		}
	}
}

func (s *searcher) emit(rec []byte) error {
	if (s.req.MaxResults > 0 && s.lines >= s.req.MaxResults) || (s.req.MaxBytes > 0 && int64(s.out.Len()+len(rec)) > s.req.MaxBytes) {
		return errSearchFull
	}
	s.out.Write(rec)
	s.lines++
	return nil
}
