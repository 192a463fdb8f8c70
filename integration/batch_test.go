package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBatchPatchesApplyInOrder sends eight patches of one file in one batch; each expects the
// text the one before it left, so any reordering or lost update fails a patch.
func TestBatchPatchesApplyInOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("start v0 end\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var calls []string
	for i := 0; i < 8; i++ {
		calls = append(calls, fmt.Sprintf(`{"call_id":"p%d","name":"patch","arguments":{"path":"f.txt","old_string":"v%d","new_string":"v%d"}}`, i, i, i+1))
	}
	rs := call(t, dir, "["+strings.Join(calls, ",")+"]")
	for i, r := range rs {
		if r.CallID != fmt.Sprintf("p%d", i) || r.Status != "ok" {
			t.Errorf("result %d: %s %s %s %s", i, r.CallID, r.Status, r.ErrorCode, r.ErrorMessage)
		}
	}
	got, _ := os.ReadFile(filepath.Join(dir, "f.txt"))
	if string(got) != "start v8 end\n" {
		t.Errorf("file = %q, want all eight patches applied", got)
	}
}

// TestBatchRunsIndependentCallsConcurrently: eight reads of different files and eight
// read-only `sleep 1` commands share no written path, so all sixteen start before any sleep
// ends.
func TestBatchRunsIndependentCallsConcurrently(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, "[approvals]\nmax_tool_workers = 16\n")
	var calls, ids []string
	for i := 0; i < 8; i++ {
		name := fmt.Sprintf("r%d.txt", i)
		ids = append(ids, fmt.Sprintf("read%d", i), fmt.Sprintf("sleep%d", i))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, fmt.Sprintf(`{"call_id":"read%d","name":"read_file","arguments":{"path":%q}}`, i, name))
		calls = append(calls, fmt.Sprintf(`{"call_id":"sleep%d","name":"terminal","arguments":{"command":"sleep 1"}}`, i))
	}
	rs := call(t, dir, "["+strings.Join(calls, ",")+"]")
	var lastStart, firstSleepEnd time.Time
	for _, r := range rs {
		if r.Status != "ok" {
			t.Fatalf("%s: %s %s %s", r.CallID, r.Status, r.ErrorCode, r.ErrorMessage)
		}
		start, err1 := time.Parse(time.RFC3339Nano, r.Metadata.StartedAt)
		end, err2 := time.Parse(time.RFC3339Nano, r.Metadata.EndedAt)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: timestamps %q %q", r.CallID, r.Metadata.StartedAt, r.Metadata.EndedAt)
		}
		if start.After(lastStart) {
			lastStart = start
		}
		if strings.HasPrefix(r.CallID, "sleep") && (firstSleepEnd.IsZero() || end.Before(firstSleepEnd)) {
			firstSleepEnd = end
		}
	}
	if !lastStart.Before(firstSleepEnd) {
		t.Errorf("a call started (%s) only after a sleep ended (%s): the batch was serialised", lastStart, firstSleepEnd)
	}
	for i, r := range rs {
		if r.CallID != ids[i] {
			t.Errorf("result %d is %s, want %s: results not in input order", i, r.CallID, ids[i])
		}
	}
}

// TestBatchSIGINT interrupts a batch: the running call is killed, the queued ones never
// start, and every one is receipted.
func TestBatchSIGINT(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, "[approvals]\nmax_tool_workers = 1\n")
	cmd := exec.Command(airlockBin, "call")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(`[{"call_id":"a","name":"terminal","arguments":{"command":"echo started > started; sleep 30"}},
	 {"call_id":"b","name":"terminal","arguments":{"command":"touch b-ran"}},
	 {"call_id":"c","name":"terminal","arguments":{"command":"touch c-ran"}}]`)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("airlock call after SIGINT: %v\n%s", err, errb.String())
	}
	var rs []result
	if err := json.Unmarshal(out.Bytes(), &rs); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if rs[0].Status != "interrupted" || rs[0].Receipt.Outcome != "interrupted" || !rs[0].Receipt.HandlerStarted {
		t.Errorf("running call: %+v", rs[0])
	}
	for _, r := range rs[1:] {
		if r.Status != "cancelled" || r.Receipt.HandlerStarted || r.Receipt.Outcome != "not_executed" {
			t.Errorf("queued call %s: %+v", r.CallID, r)
		}
	}
	for _, f := range []string{"b-ran", "c-ran"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s exists: a cancelled call ran", f)
		}
	}
	if out, _, code := run(t, dir, "", nil, "receipts", "verify", ledgerPath(dir)); code != 0 {
		t.Errorf("ledger: %s", out)
	}
}
