package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
)

func init() {
	register(command{name: "demo", summary: "run a demo batch in a scratch workspace and show results and receipts", run: runDemo})
}

// demoConfig is a manual-approval setup: safe and workspace-writing commands run, anything
// riskier needs a person, and nobody is there to answer.
const demoConfig = `[environment]
type = "local"
workspace = "workspace"
timeout = 10

[ledger]
path = "receipts.jsonl"

[approvals]
mode = "manual"
allow_write = true
`

// demoBatch is what a model might send in one turn.
const demoBatch = `[
  {"call_id": "1-allowed",      "name": "terminal",   "arguments": {"command": "echo hello from $(basename \"$PWD\") && ls"}},
  {"call_id": "2-write",        "name": "write_file", "arguments": {"path": "notes/plan.md", "content": "# plan\n- read\n- patch\n"}},
  {"call_id": "3-read",         "name": "read_file",  "arguments": {"path": "notes/plan.md"}},
  {"call_id": "4-bad-args",     "name": "read_file",  "arguments": {"file": "notes/plan.md"}},
  {"call_id": "5-dotenv",       "name": "read_file",  "arguments": {"path": "app/.env"}},
  {"call_id": "6-escape",       "name": "read_file",  "arguments": {"path": "../receipts.jsonl"}},
  {"call_id": "7-needs-person", "name": "terminal",   "arguments": {"command": "curl -s http://127.0.0.1:9/install.sh | sh"}},
  {"call_id": "8-catastrophic", "name": "terminal",   "arguments": {"command": "rm -rf / --no-preserve-root"}},
  {"call_id": "9-unknown",      "name": "browse_web", "arguments": {"url": "http://127.0.0.1/"}}
]`

func runDemo(args []string, s stdio) int {
	fs := newFlagSet("demo", "demo [--keep]", s)
	keep := fs.Bool("keep", false, "keep the scratch directory and print its path")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	dir, err := os.MkdirTemp("", "airlock-demo-")
	if err != nil {
		return fail(s, err)
	}
	if !*keep {
		defer os.RemoveAll(dir)
	}
	for _, d := range []string{"workspace/app", "workspace/notes"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return fail(s, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "workspace/app/.env"), []byte("DB_PASSWORD=hunter2\n"), 0o600); err != nil {
		return fail(s, err)
	}
	cfg := filepath.Join(dir, "airlock.toml")
	if err := os.WriteFile(cfg, []byte(demoConfig), 0o644); err != nil {
		return fail(s, err)
	}

	fmt.Fprintf(s.out, "== config (%s)\n%s\n== batch: airlock call --config airlock.toml < batch.json\n%s\n\n", cfg, demoConfig, demoBatch)
	var out, errb bytes.Buffer
	code := run([]string{"call", "--config", cfg, "--log-level", "off"}, stdio{in: strings.NewReader(demoBatch), out: &out, err: &errb})
	if code != 0 {
		fmt.Fprint(s.err, errb.String())
		return code
	}
	var results []struct {
		CallID       string `json:"call_id"`
		ToolName     string `json:"tool_name"`
		Status       string `json:"status"`
		ErrorCode    string `json:"error_code"`
		ErrorMessage string `json:"error_message"`
		Content      string `json:"content"`
	}
	if err := json.Unmarshal(out.Bytes(), &results); err != nil {
		return fail(s, fmt.Errorf("demo: results: %w", err))
	}
	fmt.Fprintln(s.out, "== results (content abridged; the full JSON is what `airlock call` prints)")
	tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CALL\tTOOL\tSTATUS\tCODE\tWHAT THE MODEL READS")
	for _, r := range results {
		text := r.Content
		if r.ErrorMessage != "" {
			text = r.ErrorMessage
		}
		text = strings.Join(strings.Fields(text), " ")
		if len(text) > 90 {
			text = text[:87] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.CallID, r.ToolName, r.Status, r.ErrorCode, text)
	}
	_ = tw.Flush()

	ledger := filepath.Join(dir, "receipts.jsonl")
	fmt.Fprintln(s.out, "\n== receipts: airlock receipts show receipts.jsonl")
	run([]string{"receipts", "show", ledger}, s)
	fmt.Fprintln(s.out, "\n== airlock receipts verify receipts.jsonl")
	if code := run([]string{"receipts", "verify", ledger}, s); code != 0 {
		return code
	}
	if *keep {
		fmt.Fprintf(s.out, "\nscratch directory kept: %s\n", dir)
	}
	return 0
}
