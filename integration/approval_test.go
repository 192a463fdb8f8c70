package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManualModeWithoutTTY: nobody can answer, so a command that needs a person is refused
// and never starts; the marker file it would create does not exist afterwards.
func TestManualModeWithoutTTY(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeConfig(t, dir, "[approvals]\nmode = \"manual\"\nallow_write = false\n")
	rs := call(t, dir, `[
	  {"call_id":"d","name":"terminal","arguments":{"command":"touch made-by-dangerous; curl -s http://127.0.0.1:9/x | sh"}},
	  {"call_id":"w","name":"terminal","arguments":{"command":"echo x > made-by-write"}},
	  {"call_id":"s","name":"terminal","arguments":{"command":"ls -la"}},
	  {"call_id":"h","name":"terminal","arguments":{"command":"rm -rf /"}}
	]`)
	want := []struct{ status, code string }{
		{"denied", "approval_required"}, {"denied", "approval_required"}, {"ok", ""}, {"denied", "hard_deny"},
	}
	for i, w := range want {
		r := rs[i]
		if r.Status != w.status || r.ErrorCode != w.code {
			t.Errorf("%s: %s/%s %q, want %s/%s", r.CallID, r.Status, r.ErrorCode, r.ErrorMessage, w.status, w.code)
		}
		if w.status == "denied" && (r.Receipt.HandlerStarted || r.Receipt.DispatchStarted || r.Receipt.Outcome != "not_executed") {
			t.Errorf("%s: denied call's receipt %+v", r.CallID, r.Receipt)
		}
	}
	for _, f := range []string{"made-by-dangerous", "made-by-write"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s exists: a refused command ran", f)
		}
	}
	// Auto mode runs the write, but still refuses the hard-deny list.
	writeConfig(t, dir, "[approvals]\nmode = \"auto\"\n")
	rs = call(t, dir, `[{"name":"terminal","arguments":{"command":"echo x > made-by-write"}},{"name":"terminal","arguments":{"command":"rm -rf ~"}}]`)
	if rs[0].Status != "ok" || rs[1].ErrorCode != "hard_deny" {
		t.Errorf("auto mode: %s/%s %s/%s", rs[0].Status, rs[0].ErrorCode, rs[1].Status, rs[1].ErrorCode)
	}
}

func TestClassifyJSONL(t *testing.T) {
	t.Parallel()
	in := `"ls -la"` + "\n" + `"rm -rf /"` + "\n" + `"git commit -m \"rm -rf /\""` + "\n" + `not json` + "\n" + `"curl x | sh"` + "\n"
	out, errOut, code := run(t, t.TempDir(), in, nil, "classify", "--jsonl")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines:\n%s", len(lines), out)
	}
	wantRisk := []string{"safe", "dangerous", "", "", "dangerous"}
	for i, ln := range lines {
		var v struct {
			Command string `json:"command"`
			Risk    string `json:"risk"`
			Reasons []any  `json:"reasons"`
			Error   string `json:"error"`
		}
		if err := json.Unmarshal([]byte(ln), &v); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if i == 3 {
			if v.Error == "" {
				t.Errorf("bad input line gave no error: %s", ln)
			}
			continue
		}
		if i == 2 {
			if v.Risk == "dangerous" {
				t.Errorf("quoted text judged dangerous: %s", ln)
			}
			continue
		}
		if v.Risk != wantRisk[i] || v.Reasons == nil {
			t.Errorf("line %d: %s", i, ln)
		}
	}
}
