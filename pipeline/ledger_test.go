package pipeline_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/receipt"
)

// fullLedger wraps the fixture's ledger: dispatched lines of the calls full names fail as on a
// full disk; every other line is kept, as the ledger's reserve keeps them.
type fullLedger struct {
	inner pipeline.Ledger
	mu    sync.Mutex
	full  func(callID string) bool
	lines []string // event:call_id of every line kept
}

func (l *fullLedger) Append(event string, r *receipt.Receipt) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if event == receipt.EventDispatched && l.full(r.CallID) {
		return &receipt.SpaceError{Path: "/ledger/receipts.jsonl", Event: event, Err: fmt.Errorf("write: no space left on device")}
	}
	l.lines = append(l.lines, event+":"+r.CallID)
	return l.inner.Append(event, r)
}

// TestNoRunWithoutDispatchedReceipt: a call whose dispatched line cannot be written does not
// run, and the batch stops there: the calls after it are refused without running, each with
// a completed receipt that says why and names the ledger. Calls dispatched before it ran.
func TestNoRunWithoutDispatchedReceipt(t *testing.T) {
	f := newFixture(t)
	// Only b meets the full disk: c and d would find room, but the batch has stopped.
	led := &fullLedger{inner: f.options.Ledger, full: func(id string) bool { return id == "c-b" }}
	rs := f.run(t, func(o *pipeline.Options) { o.Ledger = led; o.MaxWorkers = 1 },
		touch("a"), touch("b"), touch("c"), touch("d"))
	if n := f.calls.Load(); n != 1 {
		t.Errorf("%d handlers ran, want only the call whose dispatch was recorded", n)
	}
	if rs[0].Status != pipeline.StatusOK {
		t.Errorf("a: %+v", rs[0])
	}
	for _, r := range rs[1:] {
		if r.Status != pipeline.StatusFailed || r.ErrorCode != pipeline.CodeLedgerError ||
			!strings.Contains(r.ErrorMessage, "/ledger/receipts.jsonl") || r.Receipt.DispatchStarted || r.Receipt.HandlerStarted ||
			r.Receipt.Outcome != receipt.NotExecuted {
			t.Errorf("%s: %s %s %q dispatched=%v outcome=%s", r.CallID, r.Status, r.ErrorCode, r.ErrorMessage, r.Receipt.DispatchStarted, r.Receipt.Outcome)
		}
	}
	if !strings.Contains(rs[2].ErrorMessage, "batch stopped") {
		t.Errorf("c does not say the batch stopped: %q", rs[2].ErrorMessage)
	}
	want := "dispatched:c-a completed:c-a completed:c-b completed:c-c completed:c-d"
	if got := strings.Join(led.lines, " "); got != want {
		t.Errorf("ledger lines %q, want %q", got, want)
	}
	ledgerLines(t, f.ledger) // and the chain verifies
}
