package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/receipt"
	"github.com/airlock-dev/airlock/receipt/receipttest"
)

// TestFullDiskLosesNoReceipt: a command fills the filesystem that holds the workspace and
// the ledger. No call runs without a durable dispatched receipt: the calls that find no room
// for theirs are refused with an error naming the ledger, the rest of their batch and the
// next batch are refused too, every call has its completed receipt, and `airlock receipts
// verify` passes. Once space is freed, calls run again.
func TestFullDiskLosesNoReceipt(t *testing.T) {
	ws := receipttest.SmallFilesystem(t, 4<<20)
	marks := t.TempDir() // on another filesystem: a refused call that ran would leave its mark
	writeConfig(t, ws, "[environment.local]\nsandbox = \"off\"\n[network]\nmode = \"open\"\n[ledger]\npath = \".airlock/receipts.jsonl\"\n[approvals]\nmode = \"auto\"\nmax_tool_workers = 1\n")
	ledger := filepath.Join(ws, ".airlock", "receipts.jsonl")

	markCall := func(id string) string {
		return fmt.Sprintf(`{"name":"terminal","call_id":%q,"arguments":{"command":"touch %s/%s"}}`, id, marks, id)
	}
	batch := []string{`{"name":"terminal","call_id":"fill","arguments":{"command":"dd if=/dev/zero of=big bs=64k; df -k ."}}`}
	for i := 0; i < 30; i++ {
		batch = append(batch, markCall(fmt.Sprint("m", i)))
	}
	rs := call(t, ws, "["+strings.Join(batch, ",")+"]")
	if rs[0].Metadata.ExitCode == nil || !strings.Contains(rs[0].Content, "No space left") {
		t.Fatalf("the command did not fill the filesystem: %+v", rs[0])
	}
	stopped := false
	for _, r := range rs[1:] {
		_, err := os.Stat(filepath.Join(marks, r.CallID))
		ran := err == nil
		switch {
		case r.ErrorCode == "ledger_error":
			if ran || r.Receipt.DispatchStarted {
				t.Errorf("%s was refused for want of a receipt, but ran", r.CallID)
			}
			if !strings.Contains(r.ErrorMessage, ledger) {
				t.Errorf("%s: the error does not name the ledger %s: %q", r.CallID, ledger, r.ErrorMessage)
			}
			stopped = true
		case stopped:
			t.Errorf("%s ran after the batch stopped: %+v", r.CallID, r)
		case !ran || r.Status != "ok":
			t.Errorf("%s: %+v", r.CallID, r)
		}
	}
	if !stopped {
		t.Fatalf("no call was refused on a full filesystem")
	}
	// The next batch, in a new process, is refused as well.
	rs = call(t, ws, markCall("next"))
	if rs[0].ErrorCode != "ledger_error" || !strings.Contains(rs[0].ErrorMessage, ledger) {
		t.Errorf("next call on a full filesystem: %+v", rs[0])
	}
	if _, err := os.Stat(filepath.Join(marks, "next")); err == nil {
		t.Error("the next call ran without a durable receipt")
	}
	checkReceipts(t, ws, ledger, marks)

	if err := os.Remove(filepath.Join(ws, "big")); err != nil {
		t.Fatal(err)
	}
	if rs = call(t, ws, markCall("after")); rs[0].Status != "ok" {
		t.Errorf("after space was freed: %+v", rs[0])
	}
	checkReceipts(t, ws, ledger, marks)
}

// checkReceipts runs `airlock receipts verify` and checks that every call that left its
// mark has a dispatched line, and every call a completed one.
func checkReceipts(t *testing.T, ws, ledger, marks string) {
	t.Helper()
	if out, errOut, code := run(t, ws, "", nil, "receipts", "verify", ledger); code != 0 {
		t.Fatalf("receipts verify: exit %d: %s %s", code, out, errOut)
	}
	f, err := os.Open(ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := receipt.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]map[string]bool{}
	for _, ln := range lines {
		if ln.Receipt != nil {
			if seen[ln.Receipt.CallID] == nil {
				seen[ln.Receipt.CallID] = map[string]bool{}
			}
			seen[ln.Receipt.CallID][ln.Event] = true
		}
	}
	entries, _ := os.ReadDir(marks)
	for _, e := range entries {
		if !seen[e.Name()][receipt.EventDispatched] {
			t.Errorf("%s ran without a dispatched receipt in the ledger", e.Name())
		}
	}
	for id, events := range seen {
		if !events[receipt.EventCompleted] {
			t.Errorf("%s has no completed receipt", id)
		}
	}
}
