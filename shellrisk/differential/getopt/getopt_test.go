package getopt

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestParseHelp reads the help formats of the programs in the table: GNU's, gawk's (short
// and long on one line, tab-separated, no description), git's parse-options, curl's (one
// space before the description) and zstd's.
func TestParseHelp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, prog, help string
		want             []Option
	}{
		{"gnu", "time", "  -a, --append              with -o FILE, append instead of overwriting\n  -o, --output=FILE         write to FILE instead of STDERR\n",
			[]Option{{Prog: "time", Short: "a", Long: "append", Arg: "none", Help: "with -o FILE, append instead of overwriting"},
				{Prog: "time", Short: "o", Long: "output", Arg: "required", Metavar: "FILE", Output: true, Help: "write to FILE instead of STDERR"}}},
		{"short and long differ", "mktemp", "  -p DIR, --tmpdir[=DIR]  interpret TEMPLATE relative to DIR; if DIR is not\n",
			[]Option{{Prog: "mktemp", Short: "p", Long: "tmpdir", Arg: "optional", ShortArg: "required", Metavar: "DIR", Output: true, Help: "interpret TEMPLATE relative to DIR; if DIR is not"}}},
		{"gawk", "gawk", "\t-f progfile\t\t--file=progfile\n\t-o[file]\t\t--pretty-print[=file]\n\t-b\t\t\t--characters-as-bytes\n",
			[]Option{{Prog: "gawk", Short: "f", Long: "file", Arg: "required", Metavar: "progfile"},
				{Prog: "gawk", Short: "o", Long: "pretty-print", Arg: "optional", Metavar: "file", Output: true},
				{Prog: "gawk", Short: "b", Long: "characters-as-bytes", Arg: "none"}}},
		{"git", "git format-patch", "    -o, --output-directory <dir>\n                          store resulting files in <dir>\n    --[no-]numbered       use [PATCH n/m]\n",
			[]Option{{Prog: "git format-patch", Short: "o", Long: "output-directory", Arg: "required", Metavar: "dir", Output: true},
				{Prog: "git format-patch", Long: "numbered", Arg: "none", Help: "use [PATCH n/m]"}}},
		{"curl", "curl", " -o, --output <file> Write to file instead of stdout\n",
			[]Option{{Prog: "curl", Short: "o", Long: "output", Arg: "required", Metavar: "file", Output: true, Help: "Write to file instead of stdout"}}},
		{"zstd", "zstd", "  -o OUTPUT                     Write output to a single file, OUTPUT.\n",
			[]Option{{Prog: "zstd", Short: "o", Arg: "required", Metavar: "OUTPUT", Output: true, Help: "Write output to a single file, OUTPUT."}}},
		{"not an option line", "x", "Usage: x [OPTION]...\n-\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := ParseHelp(tc.prog, tc.help); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseHelp =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// TestParse checks the model against what getopt_long does with each spelling.
func TestParse(t *testing.T) {
	t.Parallel()
	tb := NewTable("time", []Option{
		{Short: "a", Long: "append", Arg: "none"},
		{Short: "o", Long: "output", Arg: "required"},
		{Short: "f", Long: "format", Arg: "required"},
		{Short: "d", Long: "dump", Arg: "optional"},
		{Long: "output-error", Arg: "required"},
	})
	ref, ok := tb.Parse([]string{"--append", "--output=x", "true"})
	if !ok {
		t.Fatal("the reference does not parse")
	}
	for _, tc := range []struct {
		args []string
		same bool
	}{
		{[]string{"-a", "-o", "x", "true"}, true},
		{[]string{"-ao", "x", "true"}, true},
		{[]string{"-aox", "true"}, true},
		{[]string{"--app", "--output", "x", "true"}, true},
		{[]string{"--append", "--output=x", "--", "true"}, true},
		{[]string{"--a", "--output=x", "true"}, true},
		// --output is exact, though --output-error starts with it; --outp is ambiguous.
		{[]string{"-a", "--outp=x", "true"}, false},
		{[]string{"-a", "-o", "x"}, false}, // no operand
		{[]string{"-ax", "true"}, false},   // no -x
		{[]string{"--append=y", "-o", "x", "true"}, false},
		{[]string{"-a", "-o"}, false},
	} {
		got, ok := tb.Parse(tc.args)
		if same := ok && got.Key() == ref.Key(); same != tc.same {
			t.Errorf("Parse(%q): same as the reference = %v, want %v", tc.args, same, tc.same)
		}
	}
	if _, ok := tb.LookupLong("outp"); ok {
		t.Error(`LookupLong("outp") resolved an ambiguous prefix`)
	}
	if n := tb.MinPrefix("append"); n != 1 {
		t.Errorf(`MinPrefix("append") = %d, want 1`, n)
	}
	// An optional argument is only ever attached.
	if got, _ := tb.Parse([]string{"-d", "x"}); len(got.opts) != 1 || got.opts[0].hasValue || !reflect.DeepEqual(got.operands, []string{"x"}) {
		t.Errorf("Parse(-d x) = %+v, want -d without a value and the operand x", got)
	}
}

// TestRespell checks that every respelling reads back as the same options, and that the
// random style makes the spellings it is for.
func TestRespell(t *testing.T) {
	t.Parallel()
	tb := NewTable("git branch", []Option{
		{Short: "d", Long: "delete", Arg: "none"}, {Short: "f", Long: "force", Arg: "none"},
		{Short: "D", Arg: "none"}, {Short: "m", Long: "move", Arg: "none"},
	})
	p, ok := tb.Parse([]string{"-D", "topic"})
	if !ok {
		t.Fatal("git branch -D topic does not parse")
	}
	if got := strings.Join(tb.Respell(p, StyleLong, nil), " "); got != "--delete --force topic" {
		t.Errorf("-D spelled long = %q, want the documented --delete --force", got)
	}
	seen := map[string]bool{}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		argv := tb.Respell(p, StyleRandom, r)
		back, ok := tb.Parse(argv)
		if !ok || back.Key() != p.Key() {
			t.Fatalf("respelling %q reads back as %+v", argv, back)
		}
		seen[strings.Join(argv, " ")] = true
	}
	for _, want := range []string{"-df topic", "--del --force topic", "-d --forc topic"} {
		if !seen[want] {
			t.Errorf("200 random respellings never made %q (made %d)", want, len(seen))
		}
	}
	if seen["-- topic"] || strings.Contains(strings.Join(keys(seen), "|"), " -- ") {
		t.Error("a respelling put -- before a git operand, which would make it a path")
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
