package receipt

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-dev/airlock/receipt/receipttest"
)

// failingWrites makes the ledger's writes fail with errno after writing part of the line, as
// a full disk does, while fail returns true.
func failingWrites(l *Ledger, errno syscall.Errno, fail func() bool) {
	l.writeLine = func(f *os.File, b []byte) (int, error) {
		if !fail() {
			return f.Write(b)
		}
		n, err := f.Write(b[:len(b)/2])
		if err != nil {
			return n, err
		}
		return n, &os.PathError{Op: "write", Path: f.Name(), Err: errno}
	}
}

func openTest(t *testing.T, opts ...Option) (*Ledger, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "receipts.jsonl")
	l, err := Open(path, opts...)
	t.Cleanup(func() { _ = l.Close() })
	if err != nil {
		t.Fatal(err)
	}
	return l, path
}

func verifyPasses(t *testing.T, path string, lines int) {
	t.Helper()
	n, err := VerifyFile(path)
	if err != nil || n != lines {
		t.Fatalf("verify = %d lines, %v; want %d lines, intact", n, err, lines)
	}
}

// TestFailedWriteLeavesNoTornLine: a write or a sync that fails leaves nothing of its line,
// the error names the ledger when the disk is full, and the chain goes on intact.
func TestFailedWriteLeavesNoTornLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		errno   syscall.Errno
		inSync  bool
		isSpace bool
	}{
		{"write ENOSPC", syscall.ENOSPC, false, true},
		{"write EDQUOT", syscall.EDQUOT, false, true},
		{"write EIO", syscall.EIO, false, false},
		{"sync EIO", syscall.EIO, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, path := openTest(t, WithReserve(0))
			if err := l.Append(EventCompleted, &Receipt{CallID: "before"}); err != nil {
				t.Fatal(err)
			}
			failing := true
			if tc.inSync {
				l.syncFile = func(f *os.File) error {
					if failing {
						return &os.PathError{Op: "sync", Path: f.Name(), Err: tc.errno}
					}
					return f.Sync()
				}
			} else {
				failingWrites(l, tc.errno, func() bool { return failing })
			}
			err := l.Append(EventDispatched, &Receipt{CallID: "lost"})
			if err == nil {
				t.Fatal("append succeeded")
			}
			var se *SpaceError
			if got := errors.As(err, &se); got != tc.isSpace || errors.Is(err, ErrNoSpace) != tc.isSpace {
				t.Errorf("error %v: a SpaceError %v, want %v", err, got, tc.isSpace)
			}
			if tc.isSpace && !strings.Contains(err.Error(), path) {
				t.Errorf("error does not name the ledger %s: %v", path, err)
			}
			verifyPasses(t, path, 1)
			failing = false
			if err := l.Append(EventCompleted, &Receipt{CallID: "after"}); err != nil {
				t.Fatal(err)
			}
			verifyPasses(t, path, 2)
		})
	}
}

// TestReserveKeepsRefusals: with the disk full, a dispatched line is refused while other
// lines spend the reserve, a step at a time; once space is back, the reserve is whole again
// before the next dispatch.
func TestReserveKeepsRefusals(t *testing.T) {
	t.Parallel()
	l, path := openTest(t, WithReserve(4*reserveStep))
	full := true
	// The disk has room only once the reserve has given back two steps.
	failingWrites(l, syscall.ENOSPC, func() bool {
		fi, err := os.Stat(reservePath(path))
		return full && (err != nil || fi.Size() > 2*reserveStep)
	})
	if err := l.Append(EventDispatched, &Receipt{CallID: "a"}); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("dispatched on a full disk: %v", err)
	}
	if err := l.Append(EventCompleted, &Receipt{CallID: "a", Outcome: NotExecuted}); err != nil {
		t.Fatalf("refusal not kept: %v", err)
	}
	if fi, _ := os.Stat(reservePath(path)); fi.Size() != 2*reserveStep {
		t.Errorf("reserve is %d bytes, want %d", fi.Size(), 2*reserveStep)
	}
	verifyPasses(t, path, 1)
	full = false
	if err := l.Append(EventDispatched, &Receipt{CallID: "b"}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(reservePath(path)); fi.Size() != 4*reserveStep {
		t.Errorf("reserve is %d bytes after the disk had room again, want %d", fi.Size(), 4*reserveStep)
	}
	verifyPasses(t, path, 2)
}

// TestReserveThatCannotBeMadeRefusesDispatch: no dispatch without the whole reserve.
func TestReserveThatCannotBeMadeRefusesDispatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "receipts.jsonl")
	if err := os.Mkdir(reservePath(path), 0o700); err != nil { // not a file: cannot be allocated
		t.Fatal(err)
	}
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	err = l.Append(EventDispatched, &Receipt{CallID: "a"})
	var se *SpaceError
	if !errors.As(err, &se) || se.Path != path || !strings.Contains(err.Error(), "reserve") {
		t.Fatalf("dispatch without a reserve: %v", err)
	}
	if err := l.Append(EventCompleted, &Receipt{CallID: "a"}); err != nil {
		t.Fatal(err)
	}
	verifyPasses(t, path, 1)
}

// TestFullFilesystem fills a real filesystem (a tmpfs mounted for the test) under the
// ledger: a dispatch is refused with an error naming the ledger, the refusal is kept in the
// reserve, verify passes, and dispatches resume once space is freed.
func TestFullFilesystem(t *testing.T) {
	dir := receipttest.SmallFilesystem(t, 1<<20)
	path := filepath.Join(dir, "receipts.jsonl")
	l, err := Open(path, WithReserve(128<<10))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Append(EventDispatched, &Receipt{CallID: "a"}); err != nil {
		t.Fatal(err)
	}
	fill := filepath.Join(dir, "fill")
	out, _ := exec.Command("dd", "if=/dev/zero", "of="+fill, "bs=4k").CombinedOutput()
	if !strings.Contains(string(out), "No space left") {
		t.Fatalf("dd did not fill the filesystem: %s", out)
	}
	if err := l.Append(EventCompleted, &Receipt{CallID: "a"}); err != nil {
		t.Fatalf("completed on a full filesystem: %v", err)
	}
	// What is left of the ledger file's last page still takes lines; then dispatches are
	// refused, and their refusals are kept.
	lines, refused := 2, 0
	for i := 0; i < 200 && refused < 3; i++ {
		id := fmt.Sprint("c", i)
		err := l.Append(EventDispatched, &Receipt{CallID: id})
		switch {
		case err == nil:
			lines++
		case errors.Is(err, ErrNoSpace) && strings.Contains(err.Error(), path):
			refused++
		default:
			t.Fatalf("dispatch %s on a full filesystem: %v", id, err)
		}
		if err := l.Append(EventCompleted, &Receipt{CallID: id}); err != nil {
			t.Fatalf("completed %s on a full filesystem: %v", id, err)
		}
		lines++
	}
	if refused == 0 {
		t.Fatal("no dispatch was refused on a full filesystem")
	}
	verifyPasses(t, path, lines)
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(EventDispatched, &Receipt{CallID: "d"}); err != nil {
		t.Fatalf("dispatch after space was freed: %v", err)
	}
	verifyPasses(t, path, lines+1)
}

// BenchmarkAppendDispatched is the cost of a dispatched line with the reserve checked
// (an fstat of the reserve before each) beside one without a reserve, in the same run.
func BenchmarkAppendDispatched(b *testing.B) {
	for _, tc := range []struct {
		name    string
		reserve int64
	}{{"reserve", DefaultReserve}, {"no-reserve", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			l, err := Open(filepath.Join(b.TempDir(), "receipts.jsonl"), WithReserve(tc.reserve))
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			r := &Receipt{CallID: "c", ToolName: "terminal", Decision: "allow"}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := l.Append(EventDispatched, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
