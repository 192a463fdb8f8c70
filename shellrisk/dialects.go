package shellrisk

import (
	"errors"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The docker and SSH backends run a command with /bin/sh, which is dash on Debian and
// busybox ash in small images, and neither reads bash: dash has no $'…', no [[ ]], no
// (( )), no brace expansion, no declare. `((rm -rf /))` is arithmetic to bash and two
// nested subshells running rm to dash; `echo $'\' ; rm -rf / #'` is one word to bash and a
// deletion to dash. A command that uses syntax only bash reads is therefore also read as
// POSIX sh and judged as the union of both readings.

// bashOnly reports whether f uses syntax that a POSIX shell reads differently. It must run
// before the walk, which expands braces in the tree.
func bashOnly(f *syntax.File) bool {
	found := false
	syntax.Walk(f, func(n syntax.Node) bool {
		if found {
			return false
		}
		switch x := n.(type) {
		case *syntax.SglQuoted:
			found = x.Dollar
		case *syntax.DblQuoted:
			found = x.Dollar
		case *syntax.ArithmCmd, *syntax.TestClause, *syntax.DeclClause, *syntax.LetClause,
			*syntax.CoprocClause, *syntax.ArrayExpr, *syntax.ProcSubst, *syntax.ExtGlob, *syntax.TimeClause:
			found = true
		case *syntax.Lit:
			// {a,b} and {1..3}; syntax.SplitBraces would change the tree.
			v := x.Value
			found = strings.Contains(v, "{") && strings.Contains(v, "}") && (strings.Contains(v, ",") || strings.Contains(v, ".."))
		case *syntax.FuncDecl:
			found = x.RsrvWord
		case *syntax.Redirect:
			switch x.Op {
			case syntax.RdrAll, syntax.AppAll, syntax.WordHdoc:
				found = true
			}
		case *syntax.BinaryCmd:
			found = x.Op == syntax.PipeAll
		}
		return !found
	})
	return found
}

// posixReading walks src as POSIX sh into the same verdict. A POSIX shell runs the lines
// before a syntax error, so when the whole text does not parse, the lines before the one
// that fails are walked.
func (w *walker) posixReading(src string) {
	f, err := parsePOSIX(src)
	var perr syntax.ParseError
	if err != nil && errors.As(err, &perr) {
		line := int(perr.Pos.Line())
		cut := 0
		for i := 1; i < line && cut >= 0; i++ {
			next := strings.IndexByte(src[cut:], '\n')
			if next < 0 {
				cut = -1
				break
			}
			cut += next + 1
		}
		if cut <= 0 {
			return
		}
		if f, err = parsePOSIX(src[:cut]); err != nil {
			return
		}
	} else if err != nil {
		return
	}
	pw := &walker{rules: w.rules, cx: w.cx, v: w.v, src: src, st: newState(), active: map[string]int{}, seen: w.seen, posix: true}
	pw.seedVars()
	pw.stmts(f.Stmts, stdin{})
}

func parsePOSIX(src string) (*syntax.File, error) {
	return syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(src), "")
}
