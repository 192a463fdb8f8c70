package receipt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// EventContinued starts a new ledger file that carries the chain on from the last good line
// of one that was unlinked, replaced or rewritten under the writer.
const EventContinued = "ledger_continued"

// A command the agent runs can delete the ledger (find -delete), rename another file over it,
// or rewrite it in place (cp, >). A writer that kept appending to the file it opened would
// then write receipts nobody can find. So before every append the ledger compares the file it
// holds open with the one its path names now (fstat against stat: device and inode) and
// checks that the last line it wrote is still where it wrote it. When either is not so, it
// makes a new file at the configured path, continuing the chain:
//
//   - unlinked, or replaced by another file: the lines still in the open file are copied into
//     the new file (they are intact and chained, and nothing else has them now), a
//     ledger_continued line records what happened and chains on from them, and a replacement
//     found at the path is renamed aside (PATH.replaced-TIME) as evidence, never appended to;
//   - rewritten in place (the bytes this process wrote are gone): what was lost cannot be
//     copied; the file is renamed aside and the new file starts with a ledger_continued line
//     that carries the last sequence number and hash this process knew, so that the chain
//     visibly continues, and its note says how many lines were lost.
//
// Another process sharing the ledger may have noticed first: a file at the path that
// already holds the chain's head is simply taken over.

// maxMoves bounds how often one append follows a ledger that keeps being replaced.
const maxMoves = 5

// fileState says whether the open file is still the ledger this process wrote.
type fileState int

const (
	fileSame      fileState = iota
	fileUnlinked            // the path names nothing
	fileReplaced            // the path names another file
	fileRewritten           // the same file, but what this process wrote is no longer there
)

func (s fileState) String() string {
	return [...]string{"intact", "unlinked", "replaced by another file", "rewritten in place"}[s]
}

// check compares the open file with the path and with what this process last wrote.
func (l *Ledger) check() (fileState, error) {
	ofi, err := l.f.Stat()
	if err != nil {
		return fileSame, fmt.Errorf("ledger: %w", err)
	}
	pfi, err := os.Stat(l.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fileUnlinked, nil
	case err != nil:
		return fileSame, fmt.Errorf("ledger: %w", err)
	case !os.SameFile(ofi, pfi):
		return fileReplaced, nil
	}
	if l.lastLen > 0 {
		if ofi.Size() < l.size {
			return fileRewritten, nil
		}
		buf := make([]byte, l.lastLen)
		if _, err := l.f.ReadAt(buf, l.size-l.lastLen); err != nil {
			return fileRewritten, nil
		}
		// The bytes this process wrote last are compared as they are; a line it did not
		// write itself (found by reloadTail or copied over) is parsed for its hash.
		if int64(len(l.lastLine)) == l.lastLen {
			if !bytes.Equal(buf, l.lastLine) {
				return fileRewritten, nil
			}
		} else if ln, err := parseLine(bytes.TrimSuffix(buf, []byte{'\n'})); err != nil || ln.Hash != l.prev {
			return fileRewritten, nil
		}
	}
	return fileSame, nil
}

// follow makes l.f a ledger file at the path that continues the chain, after check found
// state. It runs under l.mu and the lock of the old file; the new file is returned locked.
func (l *Ledger) follow(state fileState) error {
	old := l.f
	var salvage []byte
	var lost int64
	n := 0
	seq, prev := l.seq, l.prev
	if state != fileRewritten {
		// The lines still in the open file, up to the first bad one (a torn or changed tail
		// stays behind), come over when they hold what this process last saw.
		data, err := readAt(old)
		if err != nil {
			return err
		}
		c, _ := VerifyChain(bytes.NewReader(data))
		n = c.Lines
		if n > 0 && (l.prev == genesis || c.has(l.prev)) {
			salvage = data[:offsetOfLine(data, n)]
			seq, prev = c.LastSeq, c.Head
		}
	}
	if salvage == nil {
		lost = l.seq
	}
	// A file rewritten in place is the one this process holds locked: nothing to take over.
	if state == fileReplaced {
		if ok, err := l.adopt(prev); ok || err != nil {
			return err
		}
	}
	aside := ""
	if state != fileUnlinked {
		aside = fmt.Sprintf("%s.replaced-%s", l.path, time.Now().UTC().Format("20060102T150405.000000000Z"))
		if err := os.Rename(l.path, aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("ledger: set aside %s: %w", l.path, err)
		}
	}
	nf, err := os.OpenFile(l.path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return errRaced
	}
	if err != nil {
		return fmt.Errorf("ledger: continue in a new file: %w", err)
	}
	if err := syscall.Flock(int(nf.Fd()), syscall.LOCK_EX); err != nil {
		_ = nf.Close()
		return fmt.Errorf("ledger lock: %w", err)
	}
	note := fmt.Sprintf("the ledger file was %s under this writer", state)
	switch {
	case salvage != nil:
		note += fmt.Sprintf("; its %d intact lines were copied here from the file still open", n)
	case lost > 0:
		note += fmt.Sprintf("; the lines up to sequence %d (head %s) are no longer in it and could not be copied", l.seq, l.prev)
	default:
		note += "; it held no lines"
	}
	if aside != "" {
		note += "; what was at the path was kept as " + filepath.Base(aside)
	}
	l.f, l.size, l.seq, l.prev, l.lastLen, l.lastLine = nf, 0, seq, prev, 0, nil
	if len(salvage) > 0 {
		if _, err := nf.Write(salvage); err != nil {
			return fmt.Errorf("ledger write: %w", err)
		}
		l.size = int64(len(salvage))
		l.lastLen = int64(len(salvage) - offsetOfLine(salvage, bytes.Count(salvage, []byte{'\n'})-1))
	}
	if err := l.appendSpending(Line{Event: EventContinued, Note: note}); err != nil {
		return err
	}
	syncDir(filepath.Dir(l.path))
	_ = syscall.Flock(int(old.Fd()), syscall.LOCK_UN)
	_ = old.Close()
	return nil
}

// errRaced: another writer made the new file first; the caller looks again.
var errRaced = errors.New("ledger: another writer continued the ledger first")

// adopt takes over the file at the path when it already holds the chain's head: another
// process sharing the ledger continued it first.
func (l *Ledger) adopt(head string) (bool, error) {
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return false, nil
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return false, nil
	}
	lines, _ := ReadAll(io.NewSectionReader(f, 0, 1<<62))
	for _, ln := range lines {
		if ln.Hash == head {
			old := l.f
			l.f, l.size, l.lastLen, l.lastLine = f, -1, 0, nil
			_ = syscall.Flock(int(old.Fd()), syscall.LOCK_UN)
			_ = old.Close()
			return true, l.reloadTail()
		}
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	_ = f.Close()
	return false, nil
}

func readAt(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return data, nil
}

// offsetOfLine is the byte offset just past the n-th newline of data (0 for n <= 0).
func offsetOfLine(data []byte, n int) int {
	off := 0
	for i := 0; i < n; i++ {
		j := bytes.IndexByte(data[off:], '\n')
		if j < 0 {
			return off
		}
		off += j + 1
	}
	return off
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
