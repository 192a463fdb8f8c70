package shellrisk

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// aliasReading judges a call of an alias the command defined, as expanded. dash, busybox
// sh and bash as sh expand the alias; bash -c without expand_aliases runs the word
// itself. The expansion is one more reading, and the caller judges the word as the
// program (or function) it names.
//
// An alias's text is pushed back into the shell's input, so a shell reads it together
// with what follows the call, and where that changes its meaning the expansion alone
// cannot be judged: the verdict fails closed (see aliasNeedsInput).
func (w *walker) aliasReading(name, body string, rest []arg, in stdin, seg string) {
	w.calls++
	if aliasNeedsInput(body) {
		w.add(codeParseError, seg)
	}
	if w.expanding == nil {
		w.expanding = map[string]bool{}
	}
	w.expanding[name] = true
	w.code(w.expandAlias(body, rest), seg, in, true)
	delete(w.expanding, name)
}

// aliasNeedsInput reports whether what an alias's text does depends on the input after
// it. A here-document in the text takes its body from the lines after the call in bash
// (which then runs the alias's own following lines as commands), and from the alias's
// text in dash and busybox: alias ls='cat <<EOF⏎$(rm -rf ~)⏎EOF' runs rm in bash only. A
// text ending in a backslash joins the next character of the input. Text that does not
// parse alone (an open quote, if without fi, a trailing |) is completed by the input;
// code() fails closed on it.
func aliasNeedsInput(body string) bool {
	if n := len(body) - len(strings.TrimRight(body, `\`)); n%2 == 1 {
		return true
	}
	if !strings.Contains(body, "<<") {
		return false
	}
	f, err := parse(body)
	if err != nil {
		return false
	}
	hdoc := false
	syntax.Walk(f, func(n syntax.Node) bool {
		if r, ok := n.(*syntax.Redirect); ok && (r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc) {
			hdoc = true
		}
		return !hdoc
	})
	return hdoc
}

// expandAlias writes the command an alias call becomes: the alias's text, then the other
// words, each quoted, except that after an alias ending in a space the next word is
// expanded too when it is an alias.
func (w *walker) expandAlias(body string, rest []arg) string {
	var b strings.Builder
	b.WriteString(body)
	chain := strings.HasSuffix(body, " ") || strings.HasSuffix(body, "\t")
	for _, a := range rest {
		if !strings.HasSuffix(b.String(), " ") {
			b.WriteByte(' ')
		}
		if next, ok := w.aliases[a.text]; ok && chain && !a.dynamic && !a.quoted {
			b.WriteString(next)
			chain = strings.HasSuffix(next, " ")
			continue
		}
		chain = false
		t := a.text
		switch {
		case a.dynamic:
			b.WriteString(`"$x"`)
			continue
		case a.glob:
			// The pattern is expanded after the alias, as it stands.
			b.WriteString(t)
			continue
		case a.tilde && strings.HasPrefix(t, "~"):
			b.WriteByte('~')
			t = t[1:]
		}
		b.WriteString("'" + strings.ReplaceAll(t, "'", `'\''`) + "'")
	}
	return b.String()
}
