package receipt

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/receipt/receipttest"
)

func writeLedger(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "receipts.jsonl")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < n; i++ {
		if err := l.Append(EventCompleted, &Receipt{CallID: "c" + string(rune('a'+i)), ToolName: "terminal", Decision: "allow", Outcome: Executed}); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func TestVerifyIntact(t *testing.T) {
	t.Parallel()
	path := writeLedger(t, 5)
	n, err := VerifyFile(path)
	if err != nil || n != 5 {
		t.Fatalf("verify = %d, %v", n, err)
	}
}

// TestTamperAnyLine edits, removes or swaps each line in turn; verify must fail and name the
// right line every time.
func TestTamperAnyLine(t *testing.T) {
	t.Parallel()
	path := writeLedger(t, 5)
	orig, _ := os.ReadFile(path)
	lines := bytes.SplitAfter(orig, []byte("\n"))
	lines = lines[:len(lines)-1]
	for i := range lines {
		edited := make([][]byte, len(lines))
		copy(edited, lines)
		edited[i] = bytes.Replace(lines[i], []byte(`"allow"`), []byte(`"deny"`), 1)
		checkBad(t, "edit", i, bytes.Join(edited, nil), i+1)

		removed := append(append([][]byte{}, lines[:i]...), lines[i+1:]...)
		if i < len(lines)-1 { // removing the last line leaves a valid shorter chain
			checkBad(t, "remove", i, bytes.Join(removed, nil), i+1)
		}
		if i+1 < len(lines) {
			swapped := make([][]byte, len(lines))
			copy(swapped, lines)
			swapped[i], swapped[i+1] = swapped[i+1], swapped[i]
			checkBad(t, "swap", i, bytes.Join(swapped, nil), i+1)
		}
	}
}

func checkBad(t *testing.T, what string, i int, data []byte, wantLine int) {
	t.Helper()
	_, err := Verify(bytes.NewReader(data))
	var ve *VerifyError
	if !errors.As(err, &ve) {
		t.Errorf("%s line %d: err = %v, want a VerifyError", what, i+1, err)
		return
	}
	// An edit to line i breaks line i's own JSON content hash, which line i+1 checks; an
	// edit that keeps seq and prev intact is caught on the next line.
	if ve.Line != wantLine && ve.Line != wantLine+1 {
		t.Errorf("%s line %d: verify names line %d", what, i+1, ve.Line)
	}
}

func TestTornLastLine(t *testing.T) {
	t.Parallel()
	path := writeLedger(t, 3)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"seq":4,"prev":"abc","ev`)
	_ = f.Close()
	n, err := VerifyFile(path)
	var ve *VerifyError
	if !errors.As(err, &ve) || !ve.Torn || ve.Line != 4 || n != 3 {
		t.Fatalf("verify torn = %d, %v", n, err)
	}
	// Reopening cuts the torn tail and records that it did, and the chain is whole again.
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(EventCompleted, &Receipt{CallID: "after"}); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	n, err = VerifyFile(path)
	if err != nil || n != 5 {
		t.Fatalf("after recovery: %d, %v", n, err)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), EventRecovered) || !strings.Contains(string(data), "torn last line of 25 bytes") {
		t.Errorf("no recovery event:\n%s", data)
	}
}

// TestTwoWritersShareOneChain has two Ledgers (as two processes would) append to one file.
func TestTwoWritersShareOneChain(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "r.jsonl")
	var ls []*Ledger
	for i := 0; i < 2; i++ {
		l, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ls = append(ls, l)
	}
	var wg sync.WaitGroup
	for _, l := range ls {
		wg.Add(1)
		go func(l *Ledger) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if err := l.Append(EventCompleted, &Receipt{CallID: "x"}); err != nil {
					t.Error(err)
				}
			}
		}(l)
	}
	wg.Wait()
	if n, err := VerifyFile(path); err != nil || n != 100 {
		t.Fatalf("verify = %d, %v", n, err)
	}
}

func TestCanonicalHash(t *testing.T) {
	t.Parallel()
	a := HashArguments(json.RawMessage(`{"b": 1, "a": [1, 2.50]}`))
	b := HashArguments(json.RawMessage(`{"a":[1,2.50],"b":1}`))
	if a != b {
		t.Errorf("same arguments hash differently: %s %s", a, b)
	}
	if a == HashArguments(json.RawMessage(`{"a":[1,2.50],"b":2}`)) {
		t.Error("different arguments hash the same")
	}
}

// TestReceiptClone shows that a clone shares nothing with its receipt, with every field of
// a receipt set: a field added to Receipt that Clone does not copy deeply fails here.
func TestReceiptClone(t *testing.T) {
	r := receipttest.Filled[Receipt](t)
	receipttest.NoSharing(t, &r, r.Clone())
	if (*Receipt)(nil).Clone() != nil {
		t.Error("the clone of nil is not nil")
	}
}

// A ledger whose last lines are longer than the first tail window (one long line, then a
// torn one, then many short lines) reopens onto the right chain each time: the window grows
// until it holds two line ends or the whole file.
func TestReopenAcrossLongLines(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receipts.jsonl")
	long := strings.Repeat("x", 5*tailWindow)
	for i, r := range []*Receipt{
		{CallID: "short-1"},
		{CallID: "long-1", ReasonCode: long},
		{CallID: "long-2", ReasonCode: long},
		{CallID: "short-2"},
	} {
		l, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Append(EventCompleted, r); err != nil {
			t.Fatalf("append %d after reopening: %v", i, err)
		}
		_ = l.Close()
		if n, err := VerifyFile(path); err != nil || n != i+1 {
			t.Fatalf("after append %d: verify %d, %v", i, n, err)
		}
	}
	// A torn line after a long last line.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(EventCompleted, &Receipt{CallID: "long-3", ReasonCode: long}); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	_, _ = f.WriteString(`{"seq":6,"prev":"abc","ev`)
	_ = f.Close()
	l, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(EventCompleted, &Receipt{CallID: "after"}); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	if n, err := VerifyFile(path); err != nil || n != 7 {
		t.Fatalf("after a torn line behind a long one: verify %d, %v", n, err)
	}
}
