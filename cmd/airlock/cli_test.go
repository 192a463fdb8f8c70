package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/receipt"
)

// TestHelpGoesToStdout: `airlock --help | less` and `airlock X --help | less` show the help,
// for every command, with exit 0; a mistake prints its usage on stderr with exit 2.
func TestHelpGoesToStdout(t *testing.T) {
	t.Chdir(t.TempDir()) // a file named --help, if anything opened one, lands here
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.hidden { // an alias prints its command's usage (TestHelperOldNameIsHiddenAlias)
			names = append(names, n)
		}
	}
	sort.Strings(names)
	cases := [][]string{{"--help"}, {"-h"}, {"help"}, {"receipts", "verify", "--help"}, {"receipts", "show", "-h"}, {"ssh", "trust", "--help"}}
	for _, n := range names {
		cases = append(cases, []string{n, "--help"})
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := runCmd(t, "", args...)
			if code != 0 || !strings.Contains(out, "Usage: airlock") || errOut != "" {
				t.Errorf("exit %d, stdout %q, stderr %q: want the usage on stdout, exit 0", code, out, errOut)
			}
			if args[0] != "--help" && args[0] != "-h" && args[0] != "help" && !strings.Contains(out, "airlock "+args[0]) {
				t.Errorf("usage does not name the command: %q", out)
			}
		})
	}
	if _, err := os.Stat("--help"); err == nil {
		t.Error("a file named --help was created")
	}
	for _, args := range [][]string{{}, {"nosuch"}, {"receipts"}, {"receipts", "verify"}, {"gc", "--nosuch"}, {"helper", "--nosuch"}, {"agent", "--nosuch"}} {
		code, out, errOut := runCmd(t, "", args...)
		if code != 2 || out != "" || !strings.Contains(errOut, "Usage: airlock") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q: want the usage on stderr, exit 2", args, code, out, errOut)
		}
	}
	// Go's default usage ("Usage of helper:") is nowhere.
	if _, out, _ := runCmd(t, "", "helper", "--help"); strings.Contains(out, "Usage of") || !strings.Contains(out, "Usage: airlock helper") {
		t.Errorf("helper --help: %q", out)
	}
	if _, out, _ := runCmd(t, "", "gc", "--help"); !strings.Contains(strings.SplitN(out, "\n", 2)[0], "--min-age") || !strings.Contains(out, "--all-owners") {
		t.Errorf("gc usage line: %q", out)
	}
}

// TestHelperOldNameIsHiddenAlias: `airlock agent` (the helper's former name) still runs the
// helper, so that a command line written for an older airlock keeps working, but the usage
// lists only `helper`.
func TestHelperOldNameIsHiddenAlias(t *testing.T) {
	_, usage, _ := runCmd(t, "", "--help")
	if !strings.Contains(usage, "  helper ") || strings.Contains(usage, "  agent ") {
		t.Errorf("usage lists the helper as: %q", usage)
	}
	code, out, _ := runCmd(t, "", "agent", "--help")
	if code != 0 || !strings.Contains(out, "Usage: airlock helper") {
		t.Errorf("agent --help: exit %d, stdout %q", code, out)
	}
}

// TestReceiptsVerifyHelpOpensNothing: `receipts verify --help` is help, not a file name.
func TestReceiptsVerifyHelpOpensNothing(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.WriteFile("--help", []byte("not a ledger\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "", "receipts", "verify", "--help")
	if code != 0 || !strings.Contains(out, "Usage: airlock receipts verify FILE") || errOut != "" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// A file whose name starts with a dash is still reachable after --.
	if code, _, errOut := runCmd(t, "", "receipts", "verify", "--", "--help"); code != 1 || !strings.Contains(errOut, "--help") {
		t.Errorf("verify -- --help: exit %d, stderr %q", code, errOut)
	}
}

// TestReceiptsShowEscapes: a call id (or any field) holding a newline and terminal escapes
// is shown escaped, so it cannot forge a row or rewrite the screen.
func TestReceiptsShowEscapes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "receipts.jsonl")
	l, err := receipt.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	forged := "c1\n7  12:00:00.000  completed  c2  terminal  allow  safe_command\x1b[2K\u202e"
	for _, r := range []*receipt.Receipt{
		{CallID: forged, ToolName: "terminal", Decision: "deny", ReasonCode: "invalid_call_id", DecidedBy: "pipeline:call", Outcome: receipt.NotExecuted},
		{CallID: "plain", ToolName: "read\tfile", Decision: "allow", ReasonCode: "read_only_tool", DecidedBy: "risk:safe", Outcome: receipt.Executed},
	} {
		if err := l.Append(receipt.EventCompleted, r); err != nil {
			t.Fatal(err)
		}
	}
	_ = l.Close()
	code, out, errOut := runCmd(t, "", "receipts", "show", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := strings.Count(out, "\n"); n != 3 {
		t.Errorf("%d lines, want a header and 2 rows:\n%s", n, out)
	}
	if strings.ContainsAny(out, "\x1b\t\u202e") {
		t.Errorf("raw control characters in the table: %q", out)
	}
	for _, want := range []string{`"c1\n7  12:00:00.000`, `\x1b[2K\u202e"`, `"read\tfile"`, " plain "} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"plain id", "plain id"},
		{"日本語", "日本語"},
		{`"quoted"`, `"\"quoted\""`},
		{"a\x00b", `"a\x00b"`},
		{"\xff", `"\xff"`},
		{"line\u2028sep", `"line\u2028sep"`},
	} {
		if got := printable(tc.in); got != tc.want {
			t.Errorf("printable(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestVersionReadsBuildInfo(t *testing.T) {
	code, out, _ := runCmd(t, "", "version")
	if code != 0 || !strings.HasPrefix(out, "airlock ") || strings.TrimSpace(out) == "airlock dev" {
		t.Errorf("version: exit %d %q", code, out)
	}
	for _, tc := range []struct {
		b    buildInfo
		want string
	}{
		{buildInfo{Version: "v1.2.3", GoVersion: "go1.26.8", CGO: "0"}, "airlock v1.2.3 (go1.26.8, CGO_ENABLED=0)"},
		{buildInfo{Version: "(devel)", Revision: "2f73bab4060e0123456789", Time: "2026-11-29T16:43:57Z", Modified: true, GoVersion: "go1.26.8"},
			"airlock (devel) (commit 2f73bab4060e with uncommitted changes, 2026-11-29T16:43:57Z, go1.26.8)"},
	} {
		if got := versionLine(tc.b); got != tc.want {
			t.Errorf("versionLine = %q, want %q", got, tc.want)
		}
	}
}

func TestParseCallsErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"name":"terminal"} garbage`, `a JSON object followed by more text at byte 20 ("garbage")`},
		{`[{"name":"terminal"}] [1]`, `a JSON array followed by more text at byte 22`},
		{`{"name":"terminal"`, "the input ends in the middle of a value"},
		{"{\n\"name\": }", "line 2, column 9"},
		{`"terminal"`, "a JSON string: expected a tool call object"},
		{`{"tool_calls": 5}`, "tool_calls: expected an array of tool calls"},
		{``, "empty"},
	} {
		_, err := parseCalls([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseCalls(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
	calls, err := parseCalls([]byte(" {\"name\":\"terminal\",\"arguments\":{}}\n"))
	if err != nil || len(calls) != 1 || calls[0].Name != "terminal" {
		t.Errorf("one call with surrounding space: %+v %v", calls, err)
	}
}
