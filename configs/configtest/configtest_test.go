package configtest

import (
	"testing"

	_ "github.com/airlock-dev/airlock/backend/all"
	"github.com/airlock-dev/airlock/configs"
)

func TestAskToRunCode(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"no approvals table", "[ledger]\npath = \"l.jsonl\"\n"},
		{"approvals table", "[approvals]\nallow_write = false\n"},
		{"already set", "[approvals]\nask_to_run_code = true\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := configs.Parse([]byte(AskToRunCode(tc.in)), t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if !cfg.Approvals.AskToRunCode {
				t.Fatalf("ask_to_run_code not set by %q", AskToRunCode(tc.in))
			}
		})
	}
}
