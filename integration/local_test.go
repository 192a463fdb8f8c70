package integration

import (
	"github.com/airlock-dev/airlock/internal/proctest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCallForms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name, stdin string
		ids         []string
	}{
		{"single", `{"name":"terminal","arguments":{"command":"echo one"},"call_id":"x1"}`, []string{"x1"}},
		{"array", `[{"name":"terminal","arguments":{"command":"echo one"},"call_id":"a"},{"name":"terminal","arguments":{"command":"echo two"},"call_id":"b"}]`, []string{"a", "b"}},
		{"openai message", `{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"terminal","arguments":"{\"command\":\"echo one\"}"}}]}`, []string{"call_1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := call(t, dir, tc.stdin)
			if len(rs) != len(tc.ids) {
				t.Fatalf("%d results, want %d", len(rs), len(tc.ids))
			}
			for i, r := range rs {
				if r.CallID != tc.ids[i] || r.Status != "ok" || !strings.HasPrefix(r.Content, "one") && !strings.HasPrefix(r.Content, "two") {
					t.Errorf("result %d: %+v", i, r)
				}
			}
		})
	}
	// A missing call_id gets a generated one, the same each time.
	a := call(t, dir, `{"name":"terminal","arguments":{"command":"true"}}`)
	b := call(t, dir, `{"name":"terminal","arguments":{"command":"true"}}`)
	if a[0].CallID == "" || a[0].CallID != b[0].CallID {
		t.Errorf("generated call IDs %q %q", a[0].CallID, b[0].CallID)
	}
}

func TestCallUnusableInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, in := range []string{"", "not json", "[1,2]", `"str"`} {
		_, errOut, code := run(t, dir, in, nil, "call")
		if code == 0 || !strings.Contains(errOut, "stdin") {
			t.Errorf("stdin %q: exit %d, stderr %q", in, code, errOut)
		}
	}
	writeConfig(t, dir, "[environment]\ntimout = 3\n")
	_, errOut, code := run(t, dir, `{"name":"terminal","arguments":{"command":"true"}}`, nil, "call")
	if code == 0 || !strings.Contains(errOut, "environment.timout") {
		t.Errorf("bad config: exit %d, stderr %q", code, errOut)
	}
}

// TestSecretsNeverReachCommands sets secrets in airlock's own environment and reads `env`
// from inside a command.
func TestSecretsNeverReachCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, _, code := run(t, dir, "", []string{"MY_API_TOKEN=tok-secret-1", "AWS_SECRET_ACCESS_KEY=aws-secret-2", "DB_PASSWORD=db-secret-3", "LANG=C.UTF-8"}, "exec", "--", "env")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(out, "secret-") || strings.Contains(out, "MY_API_TOKEN") {
		t.Errorf("a secret reached the command:\n%s", out)
	}
	if !strings.Contains(out, "LANG=C.UTF-8") {
		t.Errorf("allowlisted LANG missing:\n%s", out)
	}
}

func TestExecExitCodesAndTreeKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, errOut, code := run(t, dir, "", nil, "exec", "--", "echo out; echo err >&2; exit 7")
	if code != 7 || out != "out\n" || !strings.Contains(errOut, "err\n") {
		t.Errorf("exec: code %d out %q err %q", code, out, errOut)
	}
	// A command that forks long sleepers and times out leaves none behind.
	pidfile := filepath.Join(dir, "pids")
	cmd := `(sleep 300 & echo "$! $(readlink /proc/self/ns/pid)" >> pids; sh -c 'sleep 300 & echo "$! $(readlink /proc/self/ns/pid)" >> pids; wait' & wait) & sleep 300`
	_, errOut, code = run(t, dir, "", nil, "exec", "--timeout", "1", "--", cmd)
	if code != 124 || !strings.Contains(errOut, "timeout") {
		t.Fatalf("timeout: code %d stderr %q", code, errOut)
	}
	data, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(data), "\n"); lines != 2 {
		t.Fatalf("want two recorded sleepers, got %q", data)
	}
	for _, rec := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if pid, alive := proctest.Alive(rec); alive {
			t.Errorf("%s (host PID %d) survived the timeout", rec, pid)
		}
	}
}

func TestReceiptsVerifyCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	call(t, dir, `[{"name":"terminal","arguments":{"command":"true"}},{"name":"nope"},{"name":"terminal","arguments":{}}]`)
	ledger := ledgerPath(dir)
	out, _, code := run(t, dir, "", nil, "receipts", "verify", ledger)
	if code != 0 || !strings.Contains(out, "chain intact") {
		t.Fatalf("verify: %d %q", code, out)
	}
	out, _, code = run(t, dir, "", nil, "receipts", "show", ledger)
	if code != 0 || !strings.Contains(out, "unknown_tool") || !strings.Contains(out, "input_validation_failed") {
		t.Errorf("show: %d\n%s", code, out)
	}
	data, _ := os.ReadFile(ledger)
	tampered := strings.Replace(string(data), `"unknown_tool"`, `"auto_approved"`, 1)
	if err := os.WriteFile(ledger, []byte(tampered), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := run(t, dir, "", nil, "receipts", "verify", ledger)
	if code == 0 || !strings.Contains(errOut, "line ") {
		t.Errorf("tampered ledger verified: %d %q", code, errOut)
	}
}

// TestSetsidDoesNotEscape: a process that leaves its command's process group with setsid is
// still killed when the command times out.
func TestSetsidDoesNotEscape(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, errOut, code := run(t, dir, "", nil, "exec", "--timeout", "1", "--",
		`setsid sh -c 'echo "$$ $(readlink /proc/self/ns/pid)" > escaped; exec sleep 300' </dev/null >/dev/null 2>&1 & sleep 300`)
	if code != 124 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	pid, err := os.ReadFile(filepath.Join(dir, "escaped"))
	if err != nil {
		t.Fatal(err)
	}
	p := strings.TrimSpace(string(pid))
	for i := 0; i < 50; i++ {
		if _, alive := proctest.Alive(p); !alive {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	host, _ := proctest.Alive(p)
	t.Errorf("setsid'd process %s (host PID %d) survived", p, host)
}

// TestExecSaysWhatTheSandboxRefused: `airlock exec` shows a person, after the command's own
// "Permission denied", which rule of the sandbox refused it and what to do; a command that
// fails for its own reasons gets no such line.
func TestExecSaysWhatTheSandboxRefused(t *testing.T) {
	requireLandlockIT(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "airlock.toml"), []byte("[approvals]\nmode = \"auto\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := run(t, dir, "", nil, "exec", "--", "cat", "airlock.toml")
	want := "airlock: sandbox refused: " + filepath.Join(dir, "airlock.toml") + " is protected"
	if code == 0 || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d, stderr %q: want a failure and %q", code, stderr, want)
	}
	_, stderr, code = run(t, dir, "", nil, "exec", "--", "sh", "-c", "echo own-failure >&2; exit 3")
	if code != 3 || strings.Contains(stderr, "sandbox refused") {
		t.Fatalf("exit %d, stderr %q: want 3 and no word of the sandbox", code, stderr)
	}
}
