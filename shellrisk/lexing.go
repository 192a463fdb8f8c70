package shellrisk

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// Where mvdan.cc/sh reads text differently from the shells that run it (bash, dash, busybox
// sh), judging the parse tree judges a command that will not run. These checks find the
// known places and fail closed: the verdict is parse_error, never safe.
//
//   - A carriage return is a blank to the parser and an ordinary character to every shell:
//     `echo hi\r# ; rm -rf /` is a comment to one and a deletion to the others.
//   - A NUL byte is skipped by the parser; shells differ (bash drops it, others cut the
//     line). The bytes 0x01 to 0x03 are the marks this package writes into words it
//     expands (field splits, the home directory, kept empty fields): a command holding one
//     is not read either.
//   - A backslash-newline right after a $ joins the lines to the shells ($\⏎{IFS} is
//     ${IFS}) and not to the parser, which reads a literal $ and {IFS}.
//   - A comment ends at the newline in every shell, but the parser joins a backslash-newline
//     inside it to the next line, which it then reads as part of the command before it.
//   - A # starts a comment only at the start of a word. After `)` (a subshell, an array
//     assignment, a function body), after a redirection operator or inside a word, the
//     shells disagree with each other and with the parser.
//   - A backslash-newline inside single quotes or $'…' is kept by the shells and may be
//     taken for a line continuation.
//   - A Unicode space (no-break space, ideographic space, …) outside quotes is part of a
//     word to bash and to the parser; whether another shell or locale splits there is not
//     worth betting a command on.
//   - Inside $'…' a \' does not end the string for bash and busybox sh, but dash has no
//     $'…' quoting: for it the string ends there and what follows runs.
//   - After >&- or <&- (close a descriptor) bash starts a new word: `rm x >&-y` passes y
//     to rm, where the parser, dash (a bad descriptor) and busybox read one target -y.
//   - A number right before &> (`ls 2&>f`) is a word to bash, the end of a background
//     job to dash and the descriptor of the redirection to busybox.

// readings returns the text around the first place where the shells and the parser may
// read src differently, or "" when there is none; f is src parsed with comments kept. When
// bash is true and there is no such place, it also reports whether f uses syntax that a
// POSIX shell reads differently (see bashOnlyNode): both in one walk of the tree, which
// every classification makes of the command and of each piece of code in it. It must run
// before the walk, which expands braces in the tree.
func readings(src string, f *syntax.File, bash bool) (problem string, bashSyntax bool) {
	if i := strings.IndexAny(src, "\r\x00\x01\x02\x03"); i >= 0 {
		return around(src, i), false
	}
	if i := strings.Index(src, "$\\\n"); i >= 0 {
		return around(src, i), false
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if problem != "" {
			return false
		}
		problem = nodeProblem(src, n)
		if bash && !bashSyntax {
			bashSyntax = bashOnlyNode(n)
		}
		return problem == ""
	})
	if problem == "" {
		for _, c := range f.Last {
			if problem = commentProblem(src, &c); problem != "" {
				break
			}
		}
	}
	return problem, bashSyntax
}

// nodeProblem is readings' lexing check of one node of the tree.
func nodeProblem(src string, n syntax.Node) string {
	switch x := n.(type) {
	case *syntax.Comment:
		return commentProblem(src, x)
	case *syntax.SglQuoted:
		return quoteProblem(src, x)
	case *syntax.Redirect:
		return closeProblem(src, x)
	case *syntax.Stmt:
		return numberAllProblem(src, x)
	case *syntax.Word:
		problem := ""
		for _, p := range x.Parts {
			if lit, ok := p.(*syntax.Lit); ok && hasUnicodeSpace(lit.Value) {
				problem = around(src, int(lit.Pos().Offset()))
			}
		}
		return problem
	}
	return ""
}

func commentProblem(src string, c *syntax.Comment) string {
	at := int(c.Hash.Offset())
	if at < 0 || at >= len(src) {
		return ""
	}
	if strings.HasSuffix(c.Text, `\`) || strings.Contains(c.Text, "\\\n") {
		return around(src, at)
	}
	if at == 0 {
		return ""
	}
	switch src[at-1] {
	case ' ', '\t', '\n', ';', '&', '|', '(':
		return ""
	}
	return around(src, at)
}

func quoteProblem(src string, q *syntax.SglQuoted) string {
	s, e := int(q.Pos().Offset()), int(q.End().Offset())
	if s < 0 || e > len(src) || s >= e {
		return ""
	}
	raw := src[s:e]
	if strings.Contains(raw, "\\\n") {
		return around(src, s)
	}
	if q.Dollar && strings.Contains(raw, `\'`) {
		return around(src, s)
	}
	if !q.Dollar && raw != "'"+q.Value+"'" {
		return around(src, s)
	}
	return ""
}

// closeProblem finds a word glued to the - of >&- or <&-.
func closeProblem(src string, r *syntax.Redirect) string {
	if (r.Op != syntax.DplIn && r.Op != syntax.DplOut) || r.Word == nil || len(r.Word.Parts) == 0 {
		return ""
	}
	lit, ok := r.Word.Parts[0].(*syntax.Lit)
	if !ok || !strings.HasPrefix(lit.Value, "-") || lit.Value == "-" && len(r.Word.Parts) == 1 {
		return ""
	}
	return around(src, int(r.OpPos.Offset()))
}

// numberAllProblem finds a word of digits glued to a &> or &>> after it.
func numberAllProblem(src string, s *syntax.Stmt) string {
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok {
		return ""
	}
	for _, r := range s.Redirs {
		if r.Op != syntax.RdrAll && r.Op != syntax.AppAll {
			continue
		}
		for _, w := range call.Args {
			if w.End() == r.OpPos && isNumber(w.Lit()) {
				return around(src, int(r.OpPos.Offset()))
			}
		}
	}
	return ""
}

// hasUnicodeSpace reports whether s holds a space character beyond ASCII, or one of the
// invisible characters that look like nothing at all.
func hasUnicodeSpace(s string) bool {
	for _, r := range s {
		if r < utf8.RuneSelf {
			continue
		}
		if unicode.IsSpace(r) || r == '\u200b' || r == '\u2060' || r == '\ufeff' {
			return true
		}
	}
	return false
}

// around returns the text near offset i, for a reason's segment.
func around(src string, i int) string {
	start, end := max(0, i-40), min(len(src), i+40)
	return src[start:end]
}
