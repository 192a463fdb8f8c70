package receipt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func appendN(t *testing.T, l *Ledger, prefix string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := l.Append(EventCompleted, &Receipt{CallID: prefix + string(rune('a'+i)), ToolName: "terminal", Decision: "allow", Outcome: Executed}); err != nil {
			t.Fatalf("append %s%d: %v", prefix, i, err)
		}
	}
}

// ledgerFile verifies the file at path and returns its chain and the call IDs it holds.
func ledgerFile(t *testing.T, path string) (Chain, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := VerifyChain(f)
	if err != nil {
		t.Fatalf("verify %s: %v", path, err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	lines, err := ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ln := range lines {
		if ln.Receipt != nil {
			ids = append(ids, ln.Receipt.CallID)
		}
	}
	return c, ids
}

func openLedger(t *testing.T, path string) *Ledger {
	t.Helper()
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func TestContinueAfterUnlinkOrReplace(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		tamper func(t *testing.T, path string)
		aside  bool
	}{
		{"unlinked", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"replaced by rename", func(t *testing.T, path string) {
			junk := path + ".junk"
			if err := os.WriteFile(junk, []byte("not a ledger\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(junk, path); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"moved away and replaced by an empty file", func(t *testing.T, path string) {
			if err := os.Rename(path, path+".moved"); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "receipts.jsonl")
			l := openLedger(t, path)
			appendN(t, l, "before-", 3)
			tc.tamper(t, path)
			appendN(t, l, "after-", 2)
			tc.tamper(t, path) // a second time: the continuation is followed again
			appendN(t, l, "again-", 1)
			c, ids := ledgerFile(t, path)
			if got := strings.Join(ids, " "); got != "before-a before-b before-c after-a after-b again-a" {
				t.Errorf("receipts in the ledger: %s", got)
			}
			if c.Lines != 8 || c.StartSeq != 1 || len(c.Continued) != 2 {
				t.Fatalf("chain: %d lines from %d, %d continuations", c.Lines, c.StartSeq, len(c.Continued))
			}
			note := c.Continued[0].Note
			if !strings.Contains(note, "3 intact lines were copied") {
				t.Errorf("continuation note: %q", note)
			}
			asides, _ := filepath.Glob(path + ".replaced-*")
			if tc.aside != (len(asides) == 2) {
				t.Errorf("replacements kept aside: %v", asides)
			}
		})
	}
}

// TestContinueAfterRewriteInPlace: a file cut or overwritten in place has lost lines that
// cannot be copied; the new file starts with a continuation that carries the chain on and
// says what was lost, and verifies.
func TestContinueAfterRewriteInPlace(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receipts.jsonl")
	l := openLedger(t, path)
	appendN(t, l, "before-", 3)
	if err := os.WriteFile(path, []byte("overwritten\n"), 0o644); err != nil { // same inode, truncated
		t.Fatal(err)
	}
	appendN(t, l, "after-", 2)
	c, ids := ledgerFile(t, path)
	if got := strings.Join(ids, " "); got != "after-a after-b" {
		t.Errorf("receipts in the ledger: %s", got)
	}
	if c.StartSeq != 4 || c.Lines != 3 || len(c.Continued) != 1 || !strings.Contains(c.Continued[0].Note, "rewritten in place") ||
		!strings.Contains(c.Continued[0].Note, "sequence 3") {
		t.Fatalf("chain: from %d, %d lines, %+v", c.StartSeq, c.Lines, c.Continued)
	}
	asides, _ := filepath.Glob(path + ".replaced-*")
	if len(asides) != 1 {
		t.Fatalf("rewritten file not kept aside: %v", asides)
	}
	if b, _ := os.ReadFile(asides[0]); string(b) != "overwritten\n" {
		t.Errorf("aside holds %q", b)
	}
}

// TestContinueSharedLedger: two writers share one ledger; after it is deleted the first to
// append continues it and the other takes the continuation over instead of forking.
func TestContinueSharedLedger(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receipts.jsonl")
	l1 := openLedger(t, path)
	l2 := openLedger(t, path)
	appendN(t, l1, "one-", 2)
	appendN(t, l2, "two-", 2)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	appendN(t, l2, "two-after-", 1)
	appendN(t, l1, "one-after-", 1)
	appendN(t, l2, "two-last-", 1)
	c, ids := ledgerFile(t, path)
	if got := strings.Join(ids, " "); got != "one-a one-b two-a two-b two-after-a one-after-a two-last-a" {
		t.Errorf("receipts: %s", got)
	}
	if len(c.Continued) != 1 {
		t.Errorf("%d continuations, want 1", len(c.Continued))
	}
	if asides, _ := filepath.Glob(path + ".replaced-*"); len(asides) != 0 {
		t.Errorf("the continuation was set aside as a replacement: %v", asides)
	}
}

// TestVerifyRejectsForgedStart: only a ledger_continued line may start a chain past 1.
func TestVerifyRejectsForgedStart(t *testing.T) {
	t.Parallel()
	path := writeLedger(t, 3)
	data, _ := os.ReadFile(path)
	rest := data[offsetOfLine(data, 1):] // drop the first line
	if _, err := VerifyChain(strings.NewReader(string(rest))); err == nil {
		t.Fatal("a chain starting at sequence 2 without a continuation verified")
	}
}
