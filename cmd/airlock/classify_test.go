package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
)

func runCmd(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, stdio{in: strings.NewReader(stdin), out: &out, err: &errb})
	return code, out.String(), errb.String()
}

func TestClassifyCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		code int
		out  []string
	}{
		{"human", []string{"classify", "--", "rm -rf /"}, 0, []string{"dangerous (hard deny)", "recursive_delete_root"}},
		{"safe", []string{"classify", "--", "ls", "-la"}, 0, []string{"safe"}},
		{"json", []string{"classify", "--json", "--", `git commit -m "rm -rf /"`}, 0, []string{`"risk":"write"`, `"command":"git commit -m \"rm -rf /\""`}},
		{"confined git diff", []string{"classify", "--", "git diff"}, 0, []string{"safe"}},
		{"unconfined git diff", []string{"classify", "--unconfined", "--", "git diff"}, 0, []string{"exec", "repo_program"}},
		{"help", []string{"classify", "--help"}, 0, nil},
		{"no command", []string{"classify"}, 2, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCmd(t, "", tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, errOut)
			}
			for _, s := range tc.out {
				if !strings.Contains(out, s) {
					t.Errorf("output %q does not contain %q", out, s)
				}
			}
		})
	}
}

func TestClassifyJSONL(t *testing.T) {
	t.Parallel()
	in := "\"rm -rf /\"\nnot json\n\"ls\"\n\"echo 'oops\"\n"
	code, out, errOut := runCmd(t, in, "classify", "--jsonl")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want 4: %q", len(lines), out)
	}
	want := []struct {
		command, risk string
		isErr         bool
	}{
		{"rm -rf /", "dangerous", false},
		{"", "", true},
		{"ls", "safe", false},
		{"echo 'oops", "dangerous", false},
	}
	for i, w := range want {
		var rec struct {
			Command string            `json:"command"`
			Risk    string            `json:"risk"`
			Reasons []json.RawMessage `json:"reasons"`
			Error   string            `json:"error"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &rec); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if w.isErr {
			if rec.Error == "" {
				t.Errorf("line %d: want an error, got %s", i+1, lines[i])
			}
			continue
		}
		if rec.Command != w.command || rec.Risk != w.risk || rec.Reasons == nil {
			t.Errorf("line %d: %s, want command %q risk %s with reasons", i+1, lines[i], w.command, w.risk)
		}
	}
}

// TestClassifyJSONLCorpus runs the whole classifier corpus, every family of issue 11
// included, through --jsonl: every line gets its answer, in order, and none is safe
// unless the corpus says so.
func TestClassifyJSONLCorpus(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../shellrisk/testdata/corpus.tsv")
	if err != nil {
		t.Fatal(err)
	}
	var in strings.Builder
	var want []string
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 {
			t.Fatalf("corpus line %q", line)
		}
		cmd := parts[2]
		if lit, ok := strings.CutPrefix(cmd, "go:"); ok {
			if cmd, err = strconv.Unquote(lit); err != nil {
				t.Fatal(err)
			}
		}
		b, _ := json.Marshal(cmd)
		in.Write(append(b, '\n'))
		want = append(want, parts[0])
	}
	code, out, errOut := runCmd(t, in.String(), "classify", "--jsonl")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d answers for %d commands", len(lines), len(want))
	}
	for i, l := range lines {
		var v struct {
			Risk     string `json:"risk"`
			Commands []any  `json:"commands"`
		}
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		if v.Risk == "safe" && want[i] != "safe" {
			t.Errorf("answer %d is safe, corpus says %s", i, want[i])
		}
		if v.Commands == nil {
			t.Errorf("answer %d has no commands list", i)
		}
	}
}
