package differential

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The option tables: testdata/options.tsv lists every option of the programs agents use
// as each program's own help states it (`PROG --help`, `git SUB -h`), read in the
// effects container from the real programs. Two things are made of it: a seed for the
// effects pass for each option that names an output file, and the tables of the getopt
// model the spelling test respells options with (spelling_test.go).
//
// The file is generated, and checked in so that the spelling test needs no container:
//
//	go test ./shellrisk/differential/ -run '^TestGenerateOptions$' -options.generate
//
// Which options name an output file is read from their help text (outputOption); the
// generated file is meant to be read by a person before it is checked in.

var flagGenerate = flag.Bool("options.generate", false, "TestGenerateOptions rewrites testdata/options.tsv from the programs' help in the effects container")

// helpPrograms are the programs whose options are read: GNU coreutils, findutils,
// diffutils and util-linux programs that take options, time, gawk, sed, tar, the
// compressors, curl and wget, and the git subcommands that write files or lose work. A
// program the host lacks is left out of the file (the generator says which).
var helpPrograms = []string{
	"base64", "cat", "chmod", "chown", "cp", "csplit", "cut", "dd", "du", "env", "head", "install",
	"ln", "ls", "mkdir", "mkfifo", "mktemp", "mv", "nl", "od", "paste", "pr", "ptx", "rm", "rmdir",
	"shred", "shuf", "sort", "split", "tac", "tail", "tee", "timeout", "touch", "tr", "truncate",
	"uniq", "wc", "xargs", "diff", "diff3", "sdiff", "cmp", "flock", "script", "column", "time",
	"gawk", "sed", "tar", "gzip", "bzip2", "xz", "zstd", "curl", "wget", "patch", "iconv", "grep",
	"git log", "git shortlog", "git whatchanged", "git show", "git diff", "git format-patch",
	"git bundle", "git archive", "git config", "git init", "git worktree", "git clone",
	"git range-diff", "git branch", "git push", "git clean", "git reset", "git checkout",
	"git stash", "git tag", "git commit",
}

// helpCommand is the command that prints a program's help to standard error (the driver
// returns only that).
func helpCommand(prog string) string {
	switch {
	case strings.HasPrefix(prog, "git "):
		return prog + " -h 1>&2"
	case prog == "time":
		return "/usr/bin/time --help 1>&2"
	case prog == "curl":
		return "curl --help all 1>&2"
	}
	return prog + " --help 1>&2"
}

// option is one row of the table: the short and long names of one option (either may be
// empty), whether it takes an argument, and whether that argument names a file the
// program writes.
type option struct {
	Prog  string
	Short string // one character, without "-"
	Long  string // without "--"
	Arg   string // of the long name (of the short one when there is none): none, required, optional
	// ShortArg is the short name's, when it differs (mktemp: -p DIR, --tmpdir[=DIR]).
	ShortArg string
	Metavar  string
	Output   bool
	Help     string
}

// optionLine finds the option part of a help line: the segments before the description,
// each starting with "-".
var (
	segmentSplit = regexp.MustCompile(`\t+| {2,}`)
	longRE       = regexp.MustCompile(`^--(?:\[no-\])?([A-Za-z0-9][-A-Za-z0-9_]*)(\[?=|\[=|=|\[)?(.*)$`)
	shortRE      = regexp.MustCompile(`^-([A-Za-z0-9#])(\[.*\])?$`)
	metavarRE    = regexp.MustCompile(`^(<[^>]+>|\[<[^>]+>\]|[A-Z][A-Z0-9_]*(?:=[A-Z]+)?|[a-z]+=[a-z]+|progfile|fs|file|dir|prefix|suffix)$`)
)

// parseHelp reads the options of one program's help text.
func parseHelp(prog, help string) []option {
	var out []option
	for _, line := range strings.Split(help, "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if !strings.HasPrefix(trimmed, "-") || trimmed == "-" || len(line) == len(trimmed) {
			continue
		}
		segs := segmentSplit.Split(trimmed, -1)
		var head []string
		i := 0
		for ; i < len(segs) && strings.HasPrefix(segs[i], "-"); i++ {
			head = append(head, segs[i])
		}
		o := option{Prog: prog, Arg: "none", Help: strings.TrimSpace(strings.Join(segs[i:], " "))}
		toks := strings.FieldsFunc(strings.Join(head, " "), func(r rune) bool { return r == ' ' || r == ',' })
		shortArg := ""
		for j := 0; j < len(toks); j++ {
			tok := toks[j]
			if !strings.HasPrefix(tok, "-") {
				// curl puts one space between an option and its description.
				o.Help = strings.TrimSpace(strings.Join(toks[j:], " ") + " " + o.Help)
				break
			}
			if m := longRE.FindStringSubmatch(tok); m != nil && strings.HasPrefix(tok, "--") {
				if o.Long == "" {
					o.Long = m[1]
				}
				switch {
				case m[2] == "=" && m[3] != "":
					o.Arg, o.Metavar = "required", m[3]
				case strings.HasPrefix(m[2], "["):
					o.Arg, o.Metavar = "optional", strings.TrimSuffix(strings.TrimPrefix(m[3], "<"), "]")
				case m[2] == "" && m[3] == "" && j+1 < len(toks) && metavarRE.MatchString(toks[j+1]):
					j++
					o.Arg, o.Metavar = argOf(toks[j])
				}
				continue
			}
			if m := shortRE.FindStringSubmatch(tok); m != nil {
				if o.Short == "" && m[1] != "#" {
					o.Short = m[1]
				}
				switch {
				case m[2] != "":
					shortArg, o.Metavar = "optional", strings.Trim(m[2], "[]<>")
				case j+1 < len(toks) && metavarRE.MatchString(toks[j+1]):
					j++
					shortArg, o.Metavar = argOf(toks[j])
				}
			}
		}
		if o.Short == "" && o.Long == "" {
			continue
		}
		switch {
		case o.Long == "" || o.Arg == "none":
			// gawk and others name the argument once, on the short form: the long one takes
			// it alike.
			if shortArg != "" {
				o.Arg = shortArg
			}
		case shortArg != "" && shortArg != o.Arg && o.Short != "":
			o.ShortArg = shortArg
		}
		o.Metavar = strings.Trim(o.Metavar, "<>[]")
		o.Output = outputOption(o)
		out = append(out, o)
	}
	return dedupe(out)
}

// shortArg is whether the short name takes an argument.
func (o option) shortArg() string {
	if o.ShortArg != "" {
		return o.ShortArg
	}
	return o.Arg
}

func argOf(tok string) (string, string) {
	if strings.HasPrefix(tok, "[") {
		return "optional", tok
	}
	return "required", tok
}

// dedupe keeps the first row for each option name: a help text may list an option twice
// (in a summary and again in its section).
func dedupe(in []option) []option {
	seen := map[string]bool{}
	var out []option
	for _, o := range in {
		k := o.Short + "\x00" + o.Long
		if seen["s"+o.Short] && o.Short != "" || seen["l"+o.Long] && o.Long != "" {
			continue
		}
		seen[k], seen["s"+o.Short], seen["l"+o.Long] = true, o.Short != "", o.Long != ""
		out = append(out, o)
	}
	return out
}

// outputOption reads from an option's help whether its argument names a file or
// directory the program writes: a file-like argument and a help text that says so.
//
// The words are rules as data; outputOverride settles the options whose help says too
// little (gawk gives none) or misleads, by "program long-or-short".
var (
	fileArg   = regexp.MustCompile(`(?i)^(file|filename|outfile|output|dir|directory|prefix|path|archive|template)$`)
	saysOut   = regexp.MustCompile(`(?i)\b(write|writes|output|save|dump|append|store|create|log|send|into|temporary)`)
	namesOut  = regexp.MustCompile(`(?i)output|dump|save|profile|pretty|trace|prefix|target-directory|tmpdir|log-file`)
	saysRead  = regexp.MustCompile(`(?i)\b(read|reads|from file|input|exclude|include|pattern|patterns|ignore|reference|key|config|cookie|netrc|CAs|certificate|header|order|skip|listed|contents)\b`)
	overrides = map[string]bool{"tar file": true, "tar one-top-level": true, "gawk dump-variables": true, "gawk pretty-print": true, "gawk profile": true, "gawk debug": false,
		// git's <prefix> is a string put in front of names, not a path.
		"git format-patch subject-prefix": false, "git archive prefix": false, "git range-diff src-prefix": false,
		"git range-diff dst-prefix": false, "git range-diff line-prefix": false}
)

func outputOption(o option) bool {
	name := o.Long
	if name == "" {
		name = o.Short
	}
	if v, ok := overrides[o.Prog+" "+name]; ok {
		return v
	}
	if o.Arg == "none" || !fileArg.MatchString(o.Metavar) {
		return false
	}
	return (saysOut.MatchString(o.Help) || namesOut.MatchString(o.Long)) && !saysRead.MatchString(o.Help)
}

// TestGenerateOptions rewrites testdata/options.tsv; without -options.generate it checks
// only that the file is there and readable.
func TestGenerateOptions(t *testing.T) {
	if !*flagGenerate {
		if len(loadOptions(t)) == 0 {
			t.Fatal("testdata/options.tsv holds no options: generate it with -options.generate")
		}
		return
	}
	s := startEffects(t)
	cmds := make([][]byte, len(helpPrograms))
	for i, p := range helpPrograms {
		cmds[i] = []byte(helpCommand(p))
	}
	res, err := s.Run(cmds)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("# Generated by TestGenerateOptions (options_test.go) from each program's own help, read in\n")
	b.WriteString("# the effects container: `PROG --help` (curl: --help all; git: `git SUB -h`). Do not edit.\n")
	b.WriteString("# program\tshort\tlong\targ\tshort_arg\tmetavar\toutput\thelp\n")
	for i, p := range helpPrograms {
		r := res[i][0]
		opts := parseHelp(p, string(r.Stderr))
		if len(opts) == 0 {
			t.Logf("%s: no options read (exit %d): %.200q", p, r.Exit, r.Stderr)
			continue
		}
		for _, o := range opts {
			out := "no"
			if o.Output {
				out = "yes"
			}
			fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.Prog, o.Short, o.Long, o.Arg, o.ShortArg, o.Metavar, out, strings.ReplaceAll(o.Help, "\t", " "))
		}
	}
	if err := os.WriteFile(filepath.Join("testdata", "options.tsv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// loadOptions reads testdata/options.tsv, by program.
func loadOptions(t testing.TB) map[string][]option {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "options.tsv"))
	if err != nil {
		t.Fatalf("options table: %v", err)
	}
	defer f.Close()
	out := map[string][]option{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p := strings.Split(line, "\t")
		if len(p) != 8 {
			t.Fatalf("options.tsv:%d: want 8 tab-separated fields, have %d", n, len(p))
		}
		out[p[0]] = append(out[p[0]], option{Prog: p[0], Short: p[1], Long: p[2], Arg: p[3], ShortArg: p[4], Metavar: p[5], Output: p[6] == "yes", Help: p[7]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// seedOperands are what an option seed puts after the option so that the program gets
// as far as writing: the operands it needs, in the scratch tree.
var seedOperands = map[string]string{
	"time": "true", "flock": "true", "timeout": "5 true", "env": "true", "xargs": "true",
	"csplit": "a.txt 2", "split": "a.txt", "sdiff": "a.txt b.txt", "diff": "a.txt b.txt",
	"diff3": "a.txt b.txt a.txt", "cmp": "a.txt b.txt", "tar": "-c a.txt", "curl": "file:///dev/null",
	"wget": "file:///dev/null", "iconv": "a.txt", "gawk": "'BEGIN { x = 1 }'", "sed": "p a.txt",
	"git log": "-1", "git shortlog": "HEAD", "git whatchanged": "-1", "git show": "HEAD",
	"git diff": "HEAD~1", "git format-patch": "-1", "git archive": "HEAD", "git range-diff": "HEAD~1 HEAD~1 HEAD",
	"mktemp": "", "script": "-q -c true", "patch": "a.txt /dev/null", "grep": "marker a.txt",
}

// optionSeeds are the effects pass's seeds made from the table: each output-file option,
// spelled long and short, naming a file beside the workspace.
func optionSeeds(t testing.TB) []input {
	t.Helper()
	opts := loadOptions(t)
	var out []input
	for _, prog := range sortedProgs(opts) {
		operands, ok := seedOperands[prog]
		if !ok {
			operands = "a.txt"
		}
		for _, o := range opts[prog] {
			if !o.Output {
				continue
			}
			name := o.Long
			if name == "" {
				name = o.Short
			}
			target := "../out/opt-" + strings.ReplaceAll(prog, " ", "-") + "-" + name
			var spellings []string
			if o.Long != "" {
				spellings = append(spellings, "--"+o.Long+"="+target)
			}
			if o.Short != "" && o.shortArg() == "required" {
				spellings = append(spellings, "-"+o.Short+" "+target)
			} else if o.Short != "" {
				spellings = append(spellings, "-"+o.Short+target)
			}
			exe := prog
			if prog == "time" {
				exe = "/usr/bin/time"
			}
			for _, sp := range spellings {
				cmd := strings.TrimSpace(exe + " " + sp + " " + operands)
				out = append(out, input{From: "options.tsv " + prog + " " + sp, Cmd: cmd})
			}
		}
	}
	return out
}

func sortedProgs(m map[string][]option) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
