package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/internal/buildtest"
)

// airlockBin is the binary under test, built by TestMain.
var airlockBin string

func TestMain(m *testing.M) {
	// The default ledger and sessions live in the user's state directory: the tests' own.
	buildtest.Main(m, "integration", &airlockBin, func(dir string) error {
		return os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	}, "CGO_ENABLED=0")
}

// run runs the airlock binary in dir with stdin and returns stdout, stderr and the exit code.
func run(t *testing.T, dir, stdin string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(airlockBin, args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewBufferString(stdin)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run airlock %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// result is the part of a ToolResult the tests read.
type result struct {
	CallID       string         `json:"call_id"`
	ToolName     string         `json:"tool_name"`
	Status       string         `json:"status"`
	ErrorCode    string         `json:"error_code"`
	ErrorMessage string         `json:"error_message"`
	Content      string         `json:"content"`
	Data         map[string]any `json:"data"`
	Metadata     struct {
		ExitCode  *int   `json:"exit_code"`
		QueuedMS  *int64 `json:"queued_ms"`
		StartedAt string `json:"started_at"`
		EndedAt   string `json:"ended_at"`
		Truncated bool   `json:"truncated"`
	} `json:"metadata"`
	Receipt struct {
		Decision        string `json:"decision"`
		ReasonCode      string `json:"reason_code"`
		DecidedBy       string `json:"decided_by"`
		DispatchStarted bool   `json:"dispatch_started"`
		HandlerStarted  bool   `json:"handler_started"`
		Outcome         string `json:"outcome"`
		Risk            string `json:"risk"`
	} `json:"receipt"`
}

// call runs `airlock call` in dir with the given calls and decodes the results.
func call(t *testing.T, dir, stdin string, args ...string) []result {
	t.Helper()
	out, errOut, code := run(t, dir, stdin, nil, append([]string{"call"}, args...)...)
	if code != 0 {
		t.Fatalf("airlock call exited %d: %s", code, errOut)
	}
	var rs []result
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("decode results: %v\n%s", err, out)
	}
	return rs
}

// ledgerPath is where a run in workspace dir keeps its receipts by default.
func ledgerPath(dir string) string {
	return filepath.Join(configs.StateDirFor(os.Getenv("XDG_STATE_HOME"), dir), "receipts.jsonl")
}

// writeConfig writes airlock.toml into dir.
func writeConfig(t *testing.T, dir, text string) string {
	t.Helper()
	p := filepath.Join(dir, "airlock.toml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
