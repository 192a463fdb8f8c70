package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval/pending"
	"github.com/airlock-dev/airlock/configs"
)

// `airlock approvals list|show` print the agent's text escaped: an escape sequence, bell,
// C1 control or bidi override in a command, a field or a diff never reaches the terminal raw,
// in the table, the text view or the JSON.
func TestApprovalsListAndShowEscape(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "airlock.toml")
	if err := os.WriteFile(file, []byte("[environment]\ntype = \"local\"\nworkspace = \".\"\n[ledger]\npath = \"state/receipts.jsonl\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	store, err := pending.Open(cfg.ApprovalsDir())
	if err != nil {
		t.Fatal(err)
	}
	evil := "make test # \x1b[2K\r\x1b[1Aapproved\x07 \u202eevil\u009b31m\x7f"
	rec := pending.Record{
		SessionID: "s1", CallID: "c1", Tool: "terminal", Arguments: []byte(`{}`), Summary: evil,
		Fields:  []pending.Field{{Name: "command", Value: evil}, {Name: "workdir\x1b]0;x\x07", Value: "."}},
		Backend: "local", Risk: "exec", Reasons: []string{"exec (exec) in \"\x1b[31m\""},
		Preview: "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-old\x1b[8m\n+new\u202e\n", SessionCovers: "this exact command \x1b[5m",
		ExpiresAt: time.Now().Add(time.Hour),
	}
	if err := store.Create(&rec); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"approvals", "list", "--config", file},
		{"approvals", "list", "--json", "--config", file},
		{"approvals", "show", rec.ID, "--config", file},
		{"approvals", "show", rec.ID, "--json", "--config", file},
	} {
		t.Run(strings.Join(args[1:3], " "), func(t *testing.T) {
			code, out, errOut := runCmd(t, "", args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if i := strings.IndexAny(out, "\x1b\x07\r\u009b\u202e\x7f"); i >= 0 {
				t.Fatalf("raw control character at %d: %q", i, out)
			}
			if !strings.Contains(out, `\u001b[2K`) && !strings.Contains(out, `\x1b[2K`) {
				t.Errorf("the escape sequence is not shown escaped: %q", out)
			}
			if !strings.Contains(out, rec.ID) {
				t.Errorf("no approval ID: %q", out)
			}
		})
	}
	_, out, _ := runCmd(t, "", "approvals", "show", rec.ID, "--config", file)
	for _, want := range []string{`"-old\x1b[8m"`, `"+new\u202e"`, `approve for the session`} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %s:\n%s", want, out)
		}
	}
}
