package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/receipt"
)

// TestLedgerSurvivesDeleteAndReplace: in the middle of one batch, shell commands delete the
// ledger and rename another file over it. Every call still has its receipts in the file the
// ledger's path names, `airlock receipts verify` passes over it and shows where the chain
// moved, and the replacement is kept aside, not appended to.
func TestLedgerSurvivesDeleteAndReplace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A ledger inside the workspace and no kernel sandbox: the configuration where a command
	// can reach the ledger at all (the sandbox, where it runs, denies it).
	writeConfig(t, dir, "[environment.local]\nsandbox = \"off\"\n[network]\nmode = \"open\"\n[ledger]\npath = \".airlock/receipts.jsonl\"\n[approvals]\nmode = \"auto\"\nmax_tool_workers = 1\n")
	ledger := filepath.Join(dir, ".airlock", "receipts.jsonl")
	call(t, dir, `{"name":"terminal","call_id":"first","arguments":{"command":"echo first"}}`)
	rs := call(t, dir, `[
	  {"name":"terminal","call_id":"b1","arguments":{"command":"echo one"}},
	  {"name":"terminal","call_id":"delete","arguments":{"command":"find . -name '*.jsonl' -delete; test ! -e .airlock/receipts.jsonl"}},
	  {"name":"terminal","call_id":"b2","arguments":{"command":"echo two"}},
	  {"name":"terminal","call_id":"replace","arguments":{"command":"printf 'forged\\n' > f.jsonl && mv f.jsonl .airlock/receipts.jsonl"}},
	  {"name":"terminal","call_id":"b3","arguments":{"command":"echo three"}}
	]`)
	moved := 0
	for _, r := range rs {
		if (r.CallID == "delete" || r.CallID == "replace") && r.Metadata.ExitCode != nil && *r.Metadata.ExitCode == 0 {
			moved++
		}
	}
	if moved < 2 {
		t.Fatalf("the commands that delete and replace the ledger did not both run: %+v", rs)
	}
	out, errOut, code := run(t, dir, "", nil, "receipts", "verify", ledger)
	if code != 0 {
		t.Fatalf("verify: exit %d: %s %s", code, out, errOut)
	}
	if strings.Count(out, receipt.EventContinued) != 2 || !strings.Contains(out, "unlinked") || !strings.Contains(out, "replaced") {
		t.Errorf("verify does not show where the chain moved:\n%s", out)
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
	completed := map[string]bool{}
	for _, ln := range lines {
		if ln.Receipt != nil && ln.Event == receipt.EventCompleted {
			completed[ln.Receipt.CallID] = true
		}
	}
	for _, id := range []string{"first", "b1", "delete", "b2", "replace", "b3"} {
		if !completed[id] {
			t.Errorf("no completed receipt for %s in the ledger", id)
		}
	}
	asides, _ := filepath.Glob(ledger + ".replaced-*")
	if len(asides) != 1 {
		t.Fatalf("replacement kept aside: %v", asides)
	}
	if b, _ := os.ReadFile(asides[0]); string(b) != "forged\n" {
		t.Errorf("the replacement was changed: %q", b)
	}
}
