package shellrisk

import (
	"strings"
)

// sedScript judges a sed script: GNU sed runs shell commands (e, s///e), writes files
// (w, W, s///w) and reads them (r, R), each of which a read-only sed call would hide.
func (w *walker) sedScript(src, seg string) {
	l := &sedLexer{src: src}
	for l.i < len(src) {
		for l.i < len(src) && strings.IndexByte(" \t\n;{}", src[l.i]) >= 0 {
			l.i++
		}
		if l.i >= len(src) {
			break
		}
		if src[l.i] == '#' {
			l.restOfLine()
			continue
		}
		l.addr()
		l.skipSpace()
		if l.more() && src[l.i] == ',' {
			l.i++
			l.skipSpace()
			l.addr()
		}
		l.skipSpace()
		for l.more() && src[l.i] == '!' {
			l.i++
			l.skipSpace()
		}
		if l.i >= len(src) {
			break
		}
		c := src[l.i]
		l.i++
		if !w.sedCommand(l, c, seg) {
			return
		}
	}
}

// sedCommand judges one sed command c, its arguments read from l; false when the script
// ends inside it.
func (w *walker) sedCommand(l *sedLexer, c byte, seg string) bool {
	src := l.src
	switch c {
	case 'e':
		if code := l.restOfLine(); code != "" {
			w.code(code, seg, stdin{}, false)
		} else {
			// e alone runs the pattern space: the input is the code.
			w.add(codeDynamicCommand, seg)
		}
	case 'w', 'W':
		w.scriptPath(l.restOfLine(), pathsWrite, seg)
	case 'r', 'R':
		w.scriptPath(l.restOfLine(), pathsRead, seg)
	case 'a', 'i', 'c':
		for l.more() && src[l.i] != '\n' {
			if src[l.i] == '\\' {
				l.i++
			}
			l.i++
		}
	case ':', 'b', 't', 'T':
		for l.more() && src[l.i] != ';' && src[l.i] != '\n' {
			l.i++
		}
	case 's', 'y':
		if !l.more() {
			return false
		}
		d := src[l.i]
		l.i++
		l.delimited(d)
		repl := l.delimited(d)
		if c == 'y' {
			return true
		}
		for l.more() && strings.IndexByte("gpiImMe0123456789w", src[l.i]) >= 0 {
			f := src[l.i]
			l.i++
			switch f {
			case 'e':
				if strings.Contains(repl, "&") || strings.Contains(repl, `\`) {
					w.add(codeDynamicCommand, seg)
				} else {
					w.code(repl, seg, stdin{}, false)
				}
			case 'w':
				w.scriptPath(l.restOfLine(), pathsWrite, seg)
			}
		}
	}
	return true
}

// sedLexer reads a sed script's addresses and arguments from src at i.
type sedLexer struct {
	src string
	i   int
}

func (l *sedLexer) more() bool { return l.i < len(l.src) }

func (l *sedLexer) skipSpace() {
	for l.more() && (l.src[l.i] == ' ' || l.src[l.i] == '\t') {
		l.i++
	}
}

func (l *sedLexer) restOfLine() string {
	start := l.i
	for l.more() && l.src[l.i] != '\n' {
		l.i++
	}
	return strings.TrimSpace(l.src[start:l.i])
}

// delimited reads up to an unescaped delim.
func (l *sedLexer) delimited(delim byte) string {
	n := len(l.src)
	start := l.i
	for l.i < n && l.src[l.i] != delim {
		if l.src[l.i] == '\\' {
			l.i++
		}
		l.i++
	}
	end := min(l.i, n)
	// Past the delimiter, but never past the end: an unterminated s/ leaves i at n.
	l.i = min(l.i+1, n)
	return l.src[start:end]
}

// addr reads an address: a line number or step, $, /regex/ with its flags, \cregexc, or
// a +N or ~N offset.
func (l *sedLexer) addr() {
	src, n := l.src, len(l.src)
	digit := func() bool { return l.i < n && src[l.i] >= '0' && src[l.i] <= '9' }
	switch {
	case digit():
		for l.i < n && (src[l.i] >= '0' && src[l.i] <= '9' || src[l.i] == '~') {
			l.i++
		}
	case l.i < n && src[l.i] == '$':
		l.i++
	case l.i < n && src[l.i] == '/':
		l.i++
		l.delimited('/')
		for l.i < n && (src[l.i] == 'I' || src[l.i] == 'M') {
			l.i++
		}
	case l.i+1 < n && src[l.i] == '\\':
		d := src[l.i+1]
		l.i += 2
		l.delimited(d)
	case l.i < n && (src[l.i] == '+' || src[l.i] == '~'):
		l.i++
		for digit() {
			l.i++
		}
	}
}

// scriptPath judges a file a script names (sed w FILE, awk print > "FILE").
func (w *walker) scriptPath(file, mode, seg string) {
	switch file {
	case "", "/dev/stdout", "/dev/stderr":
		return
	}
	a := arg{text: file, tilde: strings.HasPrefix(file, "~")}
	if mode == pathsWrite {
		w.add(codeWritesFiles, seg)
	}
	w.pathEffect(a, mode, false, seg)
}

// awkProgram judges where an awk program's print and printf statements send their output:
// > "file" and >> "file" write it, | "cmd" runs cmd; an indirect call @name(…) may be a
// call of system().
func (w *walker) awkProgram(src, seg string) {
	n := len(src)
	for i := 0; i < n; i++ {
		switch src[i] {
		case '"':
			i = skipAwkString(src, i)
			continue
		case '@':
			// gawk's indirect call @name(…) calls the function whose name is in a variable,
			// system() included; gawk also takes @ name(…) and a name in a namespace,
			// @awk::name(…).
			if awkIndirectCall(src[i+1:]) {
				w.add(codeInterpreterCode, seg)
			}
			continue
		case 'p':
		default:
			continue
		}
		if !strings.HasPrefix(src[i:], "print") || (i > 0 && isWordByte(src[i-1])) {
			continue
		}
		j := i + len("print")
		if strings.HasPrefix(src[j:], "f") {
			j++
		}
		if j < n && isWordByte(src[j]) {
			continue
		}
		depth := 0
	stmt:
		for ; j < n; j++ {
			switch c := src[j]; c {
			case '"':
				j = skipAwkString(src, j)
			case '(':
				depth++
			case ')':
				depth--
			case ';', '}', '\n':
				if depth <= 0 {
					break stmt
				}
			case '>', '|':
				if depth > 0 {
					continue
				}
				k := j + 1
				for k < n && (src[k] == '>' || src[k] == '&' || src[k] == ' ' || src[k] == '\t') {
					k++
				}
				target, quoted := awkTarget(src[k:])
				switch {
				case c == '|':
					w.add(codeInterpreterCode, seg)
					if quoted {
						w.code(target, seg, stdin{kind: inPipe}, false)
					}
				case quoted:
					w.scriptPath(target, pathsWrite, seg)
				default:
					w.add(codeWritesFiles, seg)
					w.add(codeDynamicPath, seg)
				}
				break stmt
			}
		}
		i = j
	}
}

// awkIndirectCall reports whether the text after an @ is an indirect call: a name, maybe
// qualified by a namespace (awk::f), then a parenthesis, blanks allowed around the name.
func awkIndirectCall(s string) bool {
	blanks := func(j int) int {
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		return j
	}
	j := blanks(0)
	start := j
	for j < len(s) && (isWordByte(s[j]) || s[j] == ':') {
		j++
	}
	if j == start {
		return false
	}
	j = blanks(j)
	return j < len(s) && s[j] == '('
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func skipAwkString(src string, i int) int {
	for i++; i < len(src) && src[i] != '"'; i++ {
		if src[i] == '\\' {
			i++
		}
	}
	return i
}

// awkTarget returns the output target at the start of s: a string literal's text, or
// false when it is an expression.
func awkTarget(s string) (string, bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", false
	}
	end := skipAwkString(s, 0)
	if end >= len(s) {
		return "", false
	}
	return strings.ReplaceAll(s[1:end], `\"`, `"`), true
}
