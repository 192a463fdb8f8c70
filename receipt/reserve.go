package receipt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// A command the agent runs can fill the filesystem that holds the ledger (a big file in a
// workspace on the same disk). Receipts must not fail open when it does: a call whose
// "dispatched" line cannot be made durable does not run, and the calls refused for it still
// need their "completed" lines. So the ledger keeps a reserve: a file beside it
// (PATH.reserve) holding [DefaultReserve] bytes of allocated space. The rules:
//
//   - a dispatched line is written only while the reserve is whole; when it is not, it is
//     allocated again first, and when that fails the dispatch is refused with a
//     *SpaceError, before the call runs;
//   - any other line (completed, a refusal, a recovery note) that meets a full disk shrinks
//     the reserve a step at a time, giving its space back to the filesystem, until the line
//     fits;
//   - a write or sync that fails leaves nothing of its line behind: the file is cut back to
//     the last durable line, so the chain stays whole and `airlock receipts verify` passes.
//
// The reserve outlives the process, so that the next airlock to open the ledger starts with
// it; a ledger shared by several processes shares its reserve, under the same file lock.

// DefaultReserve is the space the ledger keeps aside for the receipts of calls it has to
// refuse when its filesystem is full: room for several hundred completed lines.
const DefaultReserve = 512 << 10

// reserveStep is how much of the reserve one line that meets a full disk gives back at a time.
const reserveStep = 64 << 10

// ErrNoSpace marks a receipt that could not be written because the ledger's filesystem is
// full (or its quota spent).
var ErrNoSpace = errors.New("no space left for receipts")

// SpaceError says which ledger is out of space and which receipt it could not keep.
type SpaceError struct {
	Path  string
	Event string
	Err   error
}

func (e *SpaceError) Error() string {
	return fmt.Sprintf("ledger %s: no space left on its filesystem for the %q receipt (%v); no call runs until its receipts can be kept: free space there (df %s) or set [ledger] path to another filesystem",
		e.Path, e.Event, e.Err, filepath.Dir(e.Path))
}

func (e *SpaceError) Unwrap() []error { return []error{ErrNoSpace, e.Err} }

// isNoSpace reports whether err is the filesystem saying it is full.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// Option configures a Ledger.
type Option func(*Ledger) error

// WithReserve sets the size of the ledger's reserve; 0 keeps none (dispatched lines are then
// written as long as they fit, and a refusal after a full disk may be lost).
func WithReserve(bytes int64) Option {
	return func(l *Ledger) error {
		if bytes < 0 {
			return fmt.Errorf("ledger reserve: %d bytes is negative", bytes)
		}
		l.reserveSize = bytes
		return nil
	}
}

// reservePath is the reserve file of the ledger at path.
func reservePath(path string) string { return path + ".reserve" }

// ensureReserve makes the reserve whole: every byte of it allocated. It is called with the
// file lock held, before a dispatched line.
func (l *Ledger) ensureReserve() error {
	if l.reserveSize == 0 {
		return nil
	}
	if l.reserve == nil {
		f, err := os.OpenFile(reservePath(l.path), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("ledger reserve: %w", err)
		}
		l.reserve = f
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(l.reserve.Fd()), &st); err != nil {
		return fmt.Errorf("ledger reserve: %w", err)
	}
	if st.Size >= l.reserveSize && st.Blocks*512 >= l.reserveSize {
		return nil
	}
	err := unix.Fallocate(int(l.reserve.Fd()), 0, 0, l.reserveSize)
	if errors.Is(err, unix.EOPNOTSUPP) {
		err = fillZeros(l.reserve, st.Size, l.reserveSize)
	}
	if err != nil {
		return fmt.Errorf("ledger reserve %s: allocate %d bytes: %w", reservePath(l.path), l.reserveSize, err)
	}
	return nil
}

// fillZeros allocates a reserve on a filesystem without fallocate by writing it.
func fillZeros(f *os.File, from, to int64) error {
	buf := make([]byte, 64<<10)
	for off := from; off < to; {
		n := min(int64(len(buf)), to-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			return err
		}
		off += n
	}
	return f.Sync()
}

// releaseReserve gives a step of the reserve back to the filesystem. It reports false when
// nothing is left to give.
func (l *Ledger) releaseReserve() bool {
	if l.reserve == nil {
		f, err := os.OpenFile(reservePath(l.path), os.O_RDWR, 0)
		if err != nil {
			return false
		}
		l.reserve = f
	}
	fi, err := l.reserve.Stat()
	if err != nil || fi.Size() == 0 {
		return false
	}
	if err := l.reserve.Truncate(max(0, fi.Size()-reserveStep)); err != nil {
		return false
	}
	return true
}

// appendSpending appends ln, spending the reserve when the disk is full. A dispatched line
// never spends it: it is refused instead (see the rules above).
func (l *Ledger) appendSpending(ln Line) error {
	if ln.Event == EventDispatched {
		if err := l.ensureReserve(); err != nil {
			return &SpaceError{Path: l.path, Event: ln.Event, Err: err}
		}
	}
	err := l.appendLocked(ln)
	for err != nil && isNoSpace(err) && ln.Event != EventDispatched && l.releaseReserve() {
		err = l.appendLocked(ln)
	}
	if err != nil && isNoSpace(err) {
		return &SpaceError{Path: l.path, Event: ln.Event, Err: err}
	}
	return err
}
