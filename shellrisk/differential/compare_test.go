package differential

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/shellrisk"
)

// The property, for one command and one shell:
//
//   - every program the shell executed (a recorder's argv) matches a simple command in the
//     verdict's Commands: the same program (base names, so /bin/rm is rm) and the same
//     arguments, where a word the classifier marked unknown matches any run of words
//     (an unquoted $x or a glob may become none or several); a command whose program is
//     unknown (Name == "") matches any program;
//   - every name the shell looked up and did not find matches a judged command by program
//     name alone (its arguments were never passed);
//   - a verdict that failed closed (parse_error, too_complex: [shellrisk.Verdict.FailedClosed])
//     passes whatever the shell did: it rests on the worst case, not on its reading;
//   - a program started from code that the verdict itself marks as unknown — through eval,
//     trap, command, builtin or exec with an unknown argument, a file given to source or .,
//     or a command whose name is unknown — is tolerated when the verdict is exec or worse:
//     the classifier said it cannot know what runs, and judged accordingly.
//
// A judged command that no shell ran is never a failure: the classifier over-approximates
// on purpose (both branches of an if, every loop body, builtins, programs a wrapper would
// run, code a recorder never executes).

// codeBuiltins are the shell built-ins that run code or a program named by their arguments.
// Every other program in the image is a recorder, so only these can start what the
// classifier may not have seen when their arguments are unknown.
var codeBuiltins = map[string]bool{"eval": true, "source": true, ".": true, "trap": true, "command": true, "builtin": true, "exec": true}

// sourceBuiltins run a file's contents, which no reading of the command can know.
var sourceBuiltins = map[string]bool{"source": true, ".": true}

// finding is a program a shell ran (or looked up) that the classifier did not judge.
type finding struct {
	Command string
	Shell   string
	Ran     []string // argv, or the one name of a missing program
	Missing bool
	Verdict shellrisk.Verdict
}

func (f finding) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "command %s\n  shell %s ", strconv.Quote(f.Command), f.Shell)
	if f.Missing {
		fmt.Fprintf(&b, "looked up %s (not found here; a real machine may have it)\n", strconv.Quote(f.Ran[0]))
	} else {
		fmt.Fprintf(&b, "ran %s\n", quoteArgv(f.Ran))
	}
	fmt.Fprintf(&b, "  verdict %s %v, judged:", f.Verdict.Risk, f.Verdict.Codes())
	if len(f.Verdict.Commands) == 0 {
		b.WriteString(" nothing")
	}
	for _, c := range f.Verdict.Commands {
		fmt.Fprintf(&b, "\n    %s", judgedString(c))
	}
	return b.String()
}

func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = strconv.Quote(a)
	}
	return "[" + strings.Join(q, " ") + "]"
}

func judgedString(c shellrisk.Command) string {
	argv := make([]string, len(c.Argv))
	for i, a := range c.Argv {
		argv[i] = strings.ReplaceAll(a, shellrisk.UnknownMark, "…")
	}
	s := quoteArgv(argv)
	if c.Name == "" {
		s += " (program unknown)"
	}
	if len(c.Unknown) > 0 {
		s += fmt.Sprintf(" unknown %v", c.Unknown)
	}
	return s
}

// outcome is what compare found for one command over every shell.
type outcome struct {
	Findings  []finding
	Tolerated int // runs let through because the verdict marks their code unknown
}

// compare checks one command's results under every shell against its verdict.
func compare(cmd string, v shellrisk.Verdict, results []result) outcome {
	var out outcome
	if v.FailedClosed() {
		return out
	}
	dynamicCode := false
	if v.Risk >= shellrisk.RiskExec {
		for _, c := range v.Commands {
			if c.Name == "" || (c.Dynamic && codeBuiltins[c.Name]) || sourceBuiltins[c.Name] {
				dynamicCode = true
				break
			}
		}
	}
	for _, r := range results {
		for _, e := range r.Runs {
			argv := realArgv(r, e)
			if slices.ContainsFunc(v.Commands, func(c shellrisk.Command) bool { return matchArgv(c, argv) }) {
				continue
			}
			if dynamicCode {
				out.Tolerated++
				continue
			}
			out.Findings = append(out.Findings, finding{Command: cmd, Shell: r.Shell, Ran: argv, Verdict: v})
		}
		for _, m := range r.Missing {
			name := string(m)
			if r.Shell == "bash" || r.Shell == "bash-sh" {
				name = bashUnquote(name)
			}
			name = replaceDir(replaceDir(name, r.Dir, "."), r.Home, "~")
			if slices.ContainsFunc(v.Commands, func(c shellrisk.Command) bool { return matchName(c, name) }) {
				continue
			}
			if dynamicCode {
				out.Tolerated++
				continue
			}
			out.Findings = append(out.Findings, finding{Command: cmd, Shell: r.Shell, Ran: []string{name}, Missing: true, Verdict: v})
		}
	}
	return out
}

// realArgv is the argv a recorder logged, as the classifier would write it: the program by
// the path the shell executed (argv[0] is only what the shell passed: exec -a sets it), and
// the run's directories by the names the classifier gives them — the working directory
// (the workspace, $PWD) is ".", the home directory is "~".
func realArgv(r result, e entry) []string {
	argv := make([]string, len(e.Argv))
	for i, a := range e.Argv {
		s := string(a)
		if i > 0 {
			s = replaceDir(s, r.Dir, ".")
			s = replaceDir(s, r.Home, "~")
		}
		argv[i] = s
	}
	if len(e.Exe) > 0 && len(argv) > 0 {
		argv[0] = path.Base(string(e.Exe))
	}
	return argv
}

// replaceDir replaces dir, where it stands as a whole path or a path's first part, by name.
func replaceDir(s, dir, name string) string {
	if dir == "" {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, dir)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(dir)
		if end < len(s) && s[end] != '/' {
			b.WriteString(s[:end])
			s = s[end:]
			continue
		}
		b.WriteString(s[:i] + name)
		s = s[end:]
	}
}

// bashUnquote reads a name as bash prints it in a diagnostic: $'…' with C escapes when it
// holds bytes that do not print.
func bashUnquote(s string) string {
	body, ok := strings.CutPrefix(s, "$'")
	if !ok || !strings.HasSuffix(body, "'") {
		return s
	}
	body = body[:len(body)-1]
	var b []byte
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' || i+1 == len(body) {
			b = append(b, c)
			continue
		}
		i++
		switch e := body[i]; e {
		case 'a':
			b = append(b, 7)
		case 'b':
			b = append(b, 8)
		case 'e', 'E':
			b = append(b, 27)
		case 'f':
			b = append(b, 12)
		case 'n':
			b = append(b, 10)
		case 'r':
			b = append(b, 13)
		case 't':
			b = append(b, 9)
		case 'v':
			b = append(b, 11)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n, j := 0, i
			for ; j < len(body) && j < i+3 && body[j] >= '0' && body[j] <= '7'; j++ {
				n = n*8 + int(body[j]-'0')
			}
			b = append(b, byte(n))
			i = j - 1
		default:
			b = append(b, e)
		}
	}
	return string(b)
}

// matchName reports whether the judged command runs the program a shell named.
func matchName(c shellrisk.Command, name string) bool {
	if len(c.Argv) == 0 {
		return false
	}
	if c.Name == "" {
		return true
	}
	return patternMatch(path.Base(c.Argv[0]), path.Base(name)) || c.Name == path.Base(name)
}

// matchArgv reports whether the judged command is the argv a shell ran.
func matchArgv(c shellrisk.Command, argv []string) bool {
	if len(argv) == 0 || !matchName(c, argv[0]) {
		return false
	}
	unknown := map[int]bool{}
	for _, i := range c.Unknown {
		unknown[i] = true
	}
	return matchWords(c.Argv, unknown, 1, argv, 1)
}

// matchWords aligns judged words from i with real words from j: a known word must be equal
// to one real word; an unknown one stands for any run of real words, none included.
func matchWords(judged []string, unknown map[int]bool, i int, real []string, j int) bool {
	if i == len(judged) {
		return j == len(real)
	}
	if unknown[i] || strings.Contains(judged[i], shellrisk.UnknownMark) {
		for k := j; k <= len(real); k++ {
			if matchWords(judged, unknown, i+1, real, k) {
				return true
			}
		}
		return false
	}
	return j < len(real) && judged[i] == real[j] && matchWords(judged, unknown, i+1, real, j+1)
}

// patternMatch matches s against a judged word in which each UnknownMark stands for any
// run of bytes.
func patternMatch(pattern, s string) bool {
	parts := strings.Split(pattern, shellrisk.UnknownMark)
	if len(parts) == 1 {
		return pattern == s
	}
	b := []byte(s)
	if !bytes.HasPrefix(b, []byte(parts[0])) {
		return false
	}
	b = b[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := bytes.Index(b, []byte(p))
		if i < 0 {
			return false
		}
		b = b[i+len(p):]
	}
	return bytes.HasSuffix(b, []byte(last))
}

// classifierPrograms lists every program the classifier has a rule for, so that the image
// answers each with a recorder and its arguments get compared.
func classifierPrograms() []string {
	rc, err := shellrisk.DefaultRules()
	if err != nil {
		return nil
	}
	var out []string
	for k := range rc.Programs {
		out = append(out, strings.Fields(k)...)
	}
	for _, r := range rc.Reasons {
		for _, p := range r.Programs {
			out = append(out, strings.Fields(p)...)
		}
	}
	return out
}
