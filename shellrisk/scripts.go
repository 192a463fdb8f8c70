package shellrisk

import (
	"strings"
)

// sedScript judges a sed script: GNU sed runs shell commands (e, s///e), writes files
// (w, W, s///w) and reads them (r, R), each of which a read-only sed call would hide.
func (w *walker) sedScript(src, seg string) {
	n := len(src)
	i := 0
	skipSpace := func() {
		for i < n && (src[i] == ' ' || src[i] == '\t') {
			i++
		}
	}
	restOfLine := func() string {
		start := i
		for i < n && src[i] != '\n' {
			i++
		}
		return strings.TrimSpace(src[start:i])
	}
	// delimited reads up to an unescaped delim.
	delimited := func(delim byte) string {
		start := i
		for i < n && src[i] != delim {
			if src[i] == '\\' {
				i++
			}
			i++
		}
		end := min(i, n)
		// Past the delimiter, but never past the end: an unterminated s/ leaves i at n.
		i = min(i+1, n)
		return src[start:end]
	}
	addr := func() {
		switch {
		case i < n && src[i] >= '0' && src[i] <= '9':
			for i < n && (src[i] >= '0' && src[i] <= '9' || src[i] == '~') {
				i++
			}
		case i < n && src[i] == '$':
			i++
		case i < n && src[i] == '/':
			i++
			delimited('/')
			for i < n && (src[i] == 'I' || src[i] == 'M') {
				i++
			}
		case i+1 < n && src[i] == '\\':
			d := src[i+1]
			i += 2
			delimited(d)
		case i < n && (src[i] == '+' || src[i] == '~'):
			i++
			for i < n && src[i] >= '0' && src[i] <= '9' {
				i++
			}
		}
	}
	for i < n {
		for i < n && strings.IndexByte(" \t\n;{}", src[i]) >= 0 {
			i++
		}
		if i >= n {
			break
		}
		if src[i] == '#' {
			restOfLine()
			continue
		}
		addr()
		skipSpace()
		if i < n && src[i] == ',' {
			i++
			skipSpace()
			addr()
		}
		skipSpace()
		for i < n && src[i] == '!' {
			i++
			skipSpace()
		}
		if i >= n {
			break
		}
		c := src[i]
		i++
		switch c {
		case 'e':
			if code := restOfLine(); code != "" {
				w.code(code, seg, stdin{}, false)
			} else {
				// e alone runs the pattern space: the input is the code.
				w.add(codeDynamicCommand, seg)
			}
		case 'w', 'W':
			w.scriptPath(restOfLine(), pathsWrite, seg)
		case 'r', 'R':
			w.scriptPath(restOfLine(), pathsRead, seg)
		case 'a', 'i', 'c':
			for i < n && src[i] != '\n' {
				if src[i] == '\\' {
					i++
				}
				i++
			}
		case ':', 'b', 't', 'T':
			for i < n && src[i] != ';' && src[i] != '\n' {
				i++
			}
		case 's', 'y':
			if i >= n {
				return
			}
			d := src[i]
			i++
			delimited(d)
			repl := delimited(d)
			if c == 'y' {
				continue
			}
			for i < n && strings.IndexByte("gpiImMe0123456789w", src[i]) >= 0 {
				f := src[i]
				i++
				switch f {
				case 'e':
					if strings.Contains(repl, "&") || strings.Contains(repl, `\`) {
						w.add(codeDynamicCommand, seg)
					} else {
						w.code(repl, seg, stdin{}, false)
					}
				case 'w':
					w.scriptPath(restOfLine(), pathsWrite, seg)
				}
			}
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
