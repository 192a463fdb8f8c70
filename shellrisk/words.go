package shellrisk

import (
	"path"
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// arg is one shell word after quote removal, as far as it can be known without running
// anything.
type arg struct {
	text string
	// dynamic is true when part of the word is only known at run time ($x, $(…)).
	dynamic bool
	// tilde is true when text starts with a ~ that the shell expands to the home directory
	// (unquoted ~, or $HOME). A quoted "~" is a file named ~.
	tilde bool
	// glob is true when the word holds an unquoted pattern character.
	glob bool
	// procSubst is true when the word is a <(…) or >(…) file name.
	procSubst bool
	// quoted is true when any part of the word was quoted.
	quoted bool
	// split is true when an unquoted variable's value holds spaces: the shell splits the
	// word into several, at splitMark in text.
	split bool
	// jobPID is true when the word is the PID of a job this command started: $!, or a
	// variable assigned $!.
	jobPID bool
}

// splitMark stands in the text where the shell splits a word into fields.
const splitMark = "\x01"

// keepMark stands in the text for an empty field that the shell keeps: IFS=: splits a::b
// into a, an empty word and b.
const keepMark = "\x03"

// ifsSplit writes where the shell splits s into fields, as POSIX field splitting does: IFS
// white space around a delimiter is part of it and at the start or end of s makes no
// field, while each other IFS character ends a field, an empty one included. A field is
// joined to the text before and after the expansion in its word, so s starting or ending
// with a delimiter starts or ends with splitMark.
func ifsSplit(s, ifs string) string {
	white := func(c byte) bool { return (c == ' ' || c == '\t' || c == '\n') && strings.IndexByte(ifs, c) >= 0 }
	other := func(c byte) bool { return c != ' ' && c != '\t' && c != '\n' && strings.IndexByte(ifs, c) >= 0 }
	var b strings.Builder
	i := 0
	for i < len(s) && white(s[i]) {
		i++
	}
	if i > 0 {
		b.WriteString(splitMark)
	}
	for n := 0; i < len(s); n++ {
		start := i
		for i < len(s) && !white(s[i]) && !other(s[i]) {
			i++
		}
		f := s[start:i]
		if n > 0 {
			b.WriteString(splitMark)
		}
		if i == len(s) {
			b.WriteString(f)
			break
		}
		// The delimiter: white space, at most one other IFS character, white space.
		for i < len(s) && white(s[i]) {
			i++
		}
		if i < len(s) && other(s[i]) {
			i++
			for i < len(s) && white(s[i]) {
				i++
			}
		}
		if f == "" {
			f = keepMark
		}
		b.WriteString(f)
		if i == len(s) {
			b.WriteString(splitMark)
		}
	}
	return b.String()
}

// dynamicMark stands in the text for the parts of a word that are only known at run time.
const dynamicMark = "\x00"

// maxBraceWords bounds brace expansion: {a,b}{c,d}… can multiply without end.
const maxBraceWords = 256

// expandWords applies brace expansion, which the parser leaves as literal text, and
// resolves each resulting word.
func (w *walker) expandWords(words []*syntax.Word) []arg {
	out := make([]arg, 0, len(words))
	w.splitting = true
	defer func() { w.splitting = false }()
	for _, word := range words {
		if w.posix || !syntax.SplitBraces(word) {
			out = appendFields(out, w.resolve(word))
			continue
		}
		n := 0
		for ew, err := range expand.BracesSeq(nil, word) {
			n++
			if err != nil || n > maxBraceWords {
				out = append(out, arg{text: dynamicMark, dynamic: true})
				break
			}
			a := w.resolve(ew)
			if a.text == "" && !a.quoted && !a.dynamic {
				// {rm,-rf,x,}: an empty unquoted field is dropped.
				continue
			}
			out = appendFields(out, a)
		}
	}
	return out
}

// appendFields appends a word, split into the fields the shell makes of it.
func appendFields(out []arg, a arg) []arg {
	if a.text == "" && !a.quoted && !a.dynamic {
		// x=; $x rm …: an unquoted expansion that is empty is no word at all.
		return out
	}
	if !a.split {
		return append(out, a)
	}
	for i, f := range strings.Split(a.text, splitMark) {
		keep := strings.Contains(f, keepMark)
		f = strings.ReplaceAll(f, keepMark, "")
		if f == "" && !keep {
			continue
		}
		fa := a
		fa.split = false
		fa.text = f
		fa.tilde = a.tilde && i == 0
		out = append(out, fa)
	}
	return out
}

// wordText builds a word's text. Most words are one string (a literal, one quoted
// part), which it keeps as it is: only a second part copies them into a builder.
type wordText struct {
	first string
	multi bool
	b     strings.Builder
}

func (t *wordText) WriteString(s string) {
	if !t.multi {
		if t.first == "" {
			t.first = s
			return
		}
		t.multi = true
		t.b.Grow(len(t.first) + len(s))
		t.b.WriteString(t.first)
	}
	t.b.WriteString(s)
}

func (t *wordText) Len() int {
	if t.multi {
		return t.b.Len()
	}
	return len(t.first)
}

func (t *wordText) String() string {
	if t.multi {
		return t.b.String()
	}
	return t.first
}

// resolve removes quotes from a word and substitutes what can be known: $HOME, $PWD, $IFS
// and variables assigned a literal value earlier in the same command.
func (w *walker) resolve(word *syntax.Word) arg {
	var a arg
	var b wordText
	// busyboxDollar is set when the part before a single-quoted string is the $ that the
	// POSIX parser keeps apart: busybox sh reads the two as $'…'.
	busyboxDollar := false
	// litDollar is set by a $ that starts no expansion (a${IFS}$): bash then splits no
	// field of the word, dash and busybox split as usual.
	litDollar := false
	for i, part := range word.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v := p.Value
			if w.busybox && v == "$" && i+1 < len(word.Parts) {
				if _, ok := word.Parts[i+1].(*syntax.SglQuoted); ok {
					busyboxDollar = true
					continue
				}
			}
			if i == 0 && strings.HasPrefix(v, "~") {
				a.tilde = true
			}
			if hasUnescapedGlob(v) {
				a.glob = true
			}
			if hasUnescapedDollar(v) {
				litDollar = true
			}
			b.WriteString(unescapeLit(v))
		case *syntax.SglQuoted:
			w.singleQuoted(p, busyboxDollar, &a, &b)
			busyboxDollar = false
		case *syntax.DblQuoted:
			w.doubleQuoted(p, &a, &b)
		case *syntax.ParamExp:
			w.param(p, &a, &b, false)
		case *syntax.ProcSubst:
			a.procSubst = true
			a.dynamic = true
			b.WriteString(dynamicMark)
		case *syntax.ExtGlob:
			a.glob = true
			b.WriteString("*")
		default:
			a.dynamic = true
			b.WriteString(dynamicMark)
		}
	}
	a.text = b.String()
	if a.split && litDollar {
		a.split, a.dynamic, a.text = false, true, dynamicMark
	}
	if !a.split && strings.Contains(a.text, keepMark) {
		a.text = strings.ReplaceAll(a.text, keepMark, "")
	}
	if a.jobPID && a.text != dynamicMark {
		// $!x is not a PID.
		a.jobPID = false
	}
	return a
}

// singleQuoted writes a single-quoted part as the shell reads it: $'…' decoded as bash,
// busybox or dash does (a string with a byte this package uses as a mark, or one the locale
// decides, is not read).
func (w *walker) singleQuoted(p *syntax.SglQuoted, busyboxDollar bool, a *arg, b *wordText) {
	a.quoted = true
	if w.splitting && p.Value == "" {
		// A quoted part makes a field even when it is empty: -N${IFS}''${IFS}-q.
		b.WriteString(keepMark)
	}
	switch {
	case (p.Dollar || busyboxDollar) && w.busybox:
		d := decodeBusyboxANSIC(p.Value)
		if strings.ContainsAny(d, splitMark+homeMark+keepMark) {
			// $'\cC' is a byte this package uses as a mark: not read.
			a.dynamic = true
			d = dynamicMark
		}
		b.WriteString(d)
	case p.Dollar && w.posix:
		// dash: a $ followed by a quoted string.
		b.WriteString("$" + p.Value)
	case p.Dollar:
		d, locale := decodeANSIC(p.Value)
		if i := strings.IndexByte(d, 0); i >= 0 {
			// A NUL ends the C string the program gets: $'rm\x00x' is rm.
			d = d[:i]
		}
		if locale || strings.ContainsAny(d, splitMark+homeMark+keepMark) {
			// $'\u00e9' is é in a UTF-8 locale and \u00E9 in the C locale; $'\cC' is
			// a byte this package uses as a mark.
			a.dynamic = true
			d = dynamicMark
		}
		b.WriteString(d)
	default:
		b.WriteString(p.Value)
	}
}

// doubleQuoted writes a double-quoted part: its literals unescaped, its known parameters
// substituted, anything else unknown.
func (w *walker) doubleQuoted(p *syntax.DblQuoted, a *arg, b *wordText) {
	a.quoted = true
	start := b.Len()
	if p.Dollar && w.posix {
		// dash: $"x" is a $ and "x".
		b.WriteString("$")
	}
	for _, q := range p.Parts {
		switch qp := q.(type) {
		case *syntax.Lit:
			b.WriteString(unescapeDouble(qp.Value))
		case *syntax.ParamExp:
			w.param(qp, a, b, true)
		default:
			a.dynamic = true
			b.WriteString(dynamicMark)
		}
	}
	if w.splitting && b.Len() == start {
		// "" and "$empty" are an empty field of their own.
		b.WriteString(keepMark)
	}
}

// param substitutes a parameter expansion when its value is known. Unquoted, a known
// value is split into fields and its pattern characters glob.
func (w *walker) param(p *syntax.ParamExp, a *arg, b *wordText, quoted bool) {
	if p.Param != nil && p.Exp != nil && (p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull) {
		// ${x:=value} assigns x.
		w.forget(p.Param.Value)
	}
	simple := p.Param != nil && !p.Excl && !p.Length && !p.Width && p.Index == nil &&
		p.Slice == nil && p.Repl == nil && p.Exp == nil && p.NestedParam == nil
	if simple {
		switch name := p.Param.Value; {
		case name == "HOME":
			if b.Len() == 0 {
				a.tilde = true
				b.WriteString("~")
			} else {
				// Inside a word ~ would not be expanded; the home directory is.
				b.WriteString("/home/" + homeMark)
			}
			return
		case name == "PWD":
			b.WriteString(".")
			return
		case name == "IFS" && w.ifsDefault():
			// The default IFS: unquoted, in an argument, it splits the word there
			// (rm${IFS}-rf${IFS}/ is rm -rf /); a quoted part of the word is not split.
			if !quoted && w.splitting {
				a.split = true
				b.WriteString(splitMark)
			} else {
				b.WriteString(" \t\n")
			}
			return
		case name == "!":
			a.jobPID = b.Len() == 0
		default:
			if v, ok := w.st.vars[name]; ok && v.jobPID && !w.st.noVars {
				a.jobPID = b.Len() == 0
			} else if ok && !w.st.noVars {
				if b.Len() == 0 && v.tilde {
					a.tilde = true
				}
				t := v.text
				if !quoted {
					if hasUnescapedGlob(t) || strings.ContainsAny(t, "*?") {
						a.glob = true
					}
					ifs, known := w.ifsChars()
					if w.splitting && !known && t != "" {
						// IFS=$1; $x: where the value splits is only known at run time.
						a.dynamic = true
						b.WriteString(dynamicMark)
						return
					}
					if w.splitting && strings.ContainsAny(t, splitMark+keepMark) {
						// A value holding the marks this reading writes is not read.
						a.dynamic = true
						b.WriteString(dynamicMark)
						return
					}
					if w.splitting && strings.ContainsAny(t, ifs) {
						a.split = true
						t = ifsSplit(t, ifs)
					}
				}
				b.WriteString(t)
				return
			}
		}
	}
	a.dynamic = true
	b.WriteString(dynamicMark)
}

// hasUnescapedDollar reports whether an unquoted literal holds a $ without a backslash.
func hasUnescapedDollar(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '$':
			return true
		}
	}
	return false
}

// hasUnescapedGlob reports whether an unquoted literal holds *, ? or a [ that a ] closes.
func hasUnescapedGlob(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*', '?':
			return true
		case '[':
			if strings.Contains(s[i+1:], "]") {
				return true
			}
		}
	}
	return false
}

// globMatch matches s against a shell pattern in which * and ? match any character,
// slashes included, and [...] is a character class.
func globMatch(pat, s string) bool {
	for len(pat) > 0 {
		switch pat[0] {
		case '*':
			for len(pat) > 0 && pat[0] == '*' {
				pat = pat[1:]
			}
			if pat == "" {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if globMatch(pat, s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
			_, n := utf8.DecodeRuneInString(s)
			pat, s = pat[1:], s[n:]
		case '[':
			end := strings.IndexByte(pat, ']')
			if end < 0 || s == "" {
				return false
			}
			_, n := utf8.DecodeRuneInString(s)
			if ok, err := path.Match(pat[:end+1], s[:n]); err != nil || !ok {
				return false
			}
			pat, s = pat[end+1:], s[n:]
		default:
			if s == "" || pat[0] != s[0] {
				return false
			}
			pat, s = pat[1:], s[1:]
		}
	}
	return s == ""
}

// unescapeLit removes the backslashes of an unquoted word: \r is r, and a backslash before a
// newline joins lines.
func unescapeLit(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescapeDouble removes the backslashes that mean something inside double quotes.
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				i++
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// defaultIFS is the value every shell gives IFS when it starts, whatever the environment
// says.
const defaultIFS = " \t\n"

// ifsDefault reports whether IFS is known to have its default value.
func (w *walker) ifsDefault() bool {
	v, ok := w.st.ifs()
	return ok && v == defaultIFS
}

// ifsChars are the characters the shell splits fields at, and whether they are known
// (IFS=$1 or an IFS set in only one branch is not). An empty IFS splits nothing:
// IFS=; x='rm -rf /'; $x runs one program named "rm -rf /".
func (w *walker) ifsChars() (string, bool) {
	return w.st.ifs()
}

// paramCode judges the code bash finds in a variable's value: ${x@P} expands it as a prompt
// (running its $(…)), and an arithmetic or indirect use of a value such as a[$(cmd)]
// evaluates the subscript.
func (w *walker) paramCode(p *syntax.ParamExp) {
	if p.Param == nil {
		return
	}
	v, known := w.st.vars[p.Param.Value]
	seg := w.text(p)
	if p.Exp != nil && p.Exp.Op == syntax.OtherParamOps && p.Exp.Word != nil && p.Exp.Word.Lit() == "P" {
		if !known {
			w.add(codeDynamicCommand, seg)
			return
		}
		w.code(": \""+v.text+"\"", seg, stdin{}, true)
		return
	}
	if known {
		w.subscriptCode(arg{text: v.text}, seg)
	}
}

// arithCode judges the names an arithmetic expression evaluates: a variable whose value,
// or a quoted name (let 'a[$(cmd)]=1'), holds a subscript with a substitution runs it.
func (w *walker) arithCode(x syntax.ArithmExpr) {
	if x == nil {
		return
	}
	syntax.Walk(x, func(n syntax.Node) bool {
		word, ok := n.(*syntax.Word)
		if !ok {
			return true
		}
		a := w.resolve(word)
		w.subscriptCode(a, w.text(word))
		if v, ok := w.st.vars[a.text]; ok {
			w.subscriptCode(arg{text: v.text}, w.text(word))
		}
		return true
	})
}
