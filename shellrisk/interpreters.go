package shellrisk

import (
	"strings"
)

// inlineCode judges what code in another language visibly does: the shell commands it
// runs (os.system("…"), subprocess.run([…]), system "…", child_process.execSync("…"),
// backticks) are judged as commands, the paths it deletes (shutil.rmtree, fs.rmSync,
// FileUtils.rm_rf) as deletions, and code that reads the environment or a secret and
// also opens a connection is exfiltration. A call whose argument is not a literal runs or
// deletes something only known at run time.
//
// It reads the code as text, not as the language: code that hides a call behind getattr
// or eval is only interpreter_code, which still asks a person.
func (w *walker) inlineCode(l LanguageRule, src, seg string) {
	for _, needle := range l.Runs {
		for _, call := range callsOf(src, needle) {
			switch {
			case call.list != nil:
				argv := make([]arg, len(call.list))
				for i, s := range call.list {
					argv[i] = arg{text: s}
				}
				w.child(func() { w.run(argv, stdin{}, seg) })
			case call.known:
				w.code(call.text, seg, stdin{}, false)
			case qualified(needle):
				// os.system(cmd): what runs is only known at run time.
				w.add(codeDynamicCommand, seg)
			}
		}
	}
	for needle, how := range l.Deletes {
		for _, call := range callsOf(src, needle) {
			a := arg{text: call.text, tilde: strings.HasPrefix(call.text, "~")}
			if !call.known || call.list != nil {
				if !qualified(needle) {
					// unlink($x) in Perl, or a method of the same name: not judged by name alone.
					continue
				}
				a = arg{text: dynamicMark, dynamic: true}
			}
			w.pathEffect(a, pathsDelete, how == "recursive", seg)
		}
	}
	for _, e := range l.SecretReads {
		if strings.Contains(src, e) {
			// print(os.environ) | nc HOST: what the code prints may be a secret.
			w.leakIn()
			break
		}
	}
	if len(l.NetCalls) == 0 {
		return
	}
	net := false
	for _, n := range l.NetCalls {
		net = net || strings.Contains(src, n)
	}
	if !net {
		return
	}
	for _, e := range l.SecretReads {
		if strings.Contains(src, e) {
			w.add(codeExfiltration, seg)
			return
		}
	}
}

// qualified reports whether a needle names a call unambiguously (os.system(, not exec():
// only then is a call with an argument that is not a literal taken for a run or a delete.
func qualified(needle string) bool {
	return strings.Contains(strings.TrimSuffix(needle, "("), ".")
}

// codeCall is the first argument of one call found in code.
type codeCall struct {
	text  string   // a string literal's value
	list  []string // a list of string literals (subprocess.run(["rm", "-rf", "/"]))
	known bool     // the argument is a literal
}

// callsOf finds each use of needle in src and reads the argument after it. A needle that
// ends in "(" is a call; "`" and "qx{" are quoting that runs its content.
func callsOf(src, needle string) []codeCall {
	var out []codeCall
	for i := 0; i < len(src) && len(out) < maxCodeCalls; {
		j := strings.Index(src[i:], needle)
		if j < 0 {
			break
		}
		start := i + j + len(needle)
		i = start
		switch needle {
		case "`":
			end := strings.IndexByte(src[start:], '`')
			if end < 0 {
				out = append(out, codeCall{})
				return out
			}
			body := src[start : start+end]
			out = append(out, codeCall{text: body, known: !strings.ContainsAny(body, "$#@")})
			i = start + end + 1
			continue
		}
		rest := strings.TrimLeft(src[start:], " \t")
		if strings.HasPrefix(rest, "[") {
			if list, ok := literalList(rest[1:]); ok {
				out = append(out, codeCall{list: list, known: true})
				continue
			}
			out = append(out, codeCall{})
			continue
		}
		if s, ok := literal(rest); ok {
			out = append(out, codeCall{text: s, known: true})
			continue
		}
		out = append(out, codeCall{})
	}
	return out
}

// maxCodeCalls bounds the calls read from one piece of code.
const maxCodeCalls = 64

// literal reads a string literal at the start of s: '…', "…" or `…`, with an optional
// Python prefix (r, b, u). An f-string or a template with ${…} is not a literal.
func literal(s string) (string, bool) {
	s = strings.TrimLeft(s, "rRbBuU")
	if s == "" {
		return "", false
	}
	q := s[0]
	if q != '\'' && q != '"' && q != '`' {
		return "", false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(s[i])
			}
		case c == q:
			v := b.String()
			if q == '`' && strings.Contains(v, "${") {
				return "", false
			}
			return v, true
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}

// literalList reads string literals separated by commas up to a closing ].
func literalList(s string) ([]string, bool) {
	var out []string
	for {
		s = strings.TrimLeft(s, " \t\n")
		if strings.HasPrefix(s, "]") {
			return out, len(out) > 0
		}
		v, ok := literal(s)
		if !ok {
			return nil, false
		}
		out = append(out, v)
		// Skip past the literal: find its closing quote again from the raw text.
		s = strings.TrimLeft(s, "rRbBuU")
		end := closingQuote(s)
		if end < 0 {
			return nil, false
		}
		s = strings.TrimLeft(s[end+1:], " \t\n")
		if strings.HasPrefix(s, ",") {
			s = s[1:]
		} else if !strings.HasPrefix(s, "]") {
			return nil, false
		}
	}
}

func closingQuote(s string) int {
	q := s[0]
	for i := 1; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == q {
			return i
		}
	}
	return -1
}
