package getopt

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Option is one row of a table: the short and long names of one Option (either may be
// empty), whether it takes an argument, and whether that argument names a file the
// program writes.
type Option struct {
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

// The parts of a help line: segments are split by tabs or two spaces, and the option
// part is the segments before the description, each starting with "-".
var (
	segmentSplit = regexp.MustCompile(`\t+| {2,}`)
	longRE       = regexp.MustCompile(`^--(?:\[no-\])?([A-Za-z0-9][-A-Za-z0-9_]*)(\[?=|\[=|=|\[)?(.*)$`)
	shortRE      = regexp.MustCompile(`^-([A-Za-z0-9#])(\[.*\])?$`)
	metavarRE    = regexp.MustCompile(`^(<[^>]+>|\[<[^>]+>\]|[A-Z][A-Z0-9_]*(?:=[A-Z]+)?|[a-z]+=[a-z]+|progfile|fs|file|dir|prefix|suffix)$`)
)

// ParseHelp reads the options of one program's help text.
func ParseHelp(prog, help string) []Option {
	var out []Option
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
		o := Option{Prog: prog, Arg: "none", Help: strings.TrimSpace(strings.Join(segs[i:], " "))}
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
func (o Option) ShortArgKind() string {
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
func dedupe(in []Option) []Option {
	seen := map[string]bool{}
	var out []Option
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

func outputOption(o Option) bool {
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

// Load reads an option table file (options.tsv), by program.
func Load(file string) (map[string][]Option, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("option table: %w", err)
	}
	defer f.Close()
	out := map[string][]Option{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p := strings.Split(line, "\t")
		if len(p) != 8 {
			return nil, fmt.Errorf("%s:%d: want 8 tab-separated fields, have %d", file, n, len(p))
		}
		out[p[0]] = append(out[p[0]], Option{Prog: p[0], Short: p[1], Long: p[2], Arg: p[3], ShortArg: p[4], Metavar: p[5], Output: p[6] == "yes", Help: p[7]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	return out, nil
}

// Format writes options as the lines of an option table file.
func Format(opts []Option) string {
	var b strings.Builder
	for _, o := range opts {
		out := "no"
		if o.Output {
			out = "yes"
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.Prog, o.Short, o.Long, o.Arg, o.ShortArg, o.Metavar, out, strings.ReplaceAll(o.Help, "\t", " "))
	}
	return b.String()
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

// Seed is one command made from a table, and where it came from.
type Seed struct {
	From string
	Cmd  string
}

// OutputSeeds are the effects pass's seeds made from the tables: each output-file option,
// spelled long and short, naming a file in ../out (beside the workspace of the effects
// pass's scratch tree), with the operands that get the program as far as writing.
func OutputSeeds(opts map[string][]Option) []Seed {
	var out []Seed
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
			if o.Short != "" && o.ShortArgKind() == "required" {
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
				out = append(out, Seed{From: "options.tsv " + prog + " " + sp, Cmd: cmd})
			}
		}
	}
	return out
}

func sortedProgs(m map[string][]Option) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
