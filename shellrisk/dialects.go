package shellrisk

import (
	"errors"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The docker and SSH backends run a command with /bin/sh, which is dash on Debian and
// busybox ash in small images, and neither reads bash: dash has no $'…', no [[ ]], no
// (( )), no brace expansion, no declare. `((rm -rf /))` is arithmetic to bash and two
// nested subshells running rm to dash; `echo $'\' ; rm -rf / #'` is one word to bash and a
// deletion to dash. A command that uses syntax only bash reads is therefore also read as
// POSIX sh and judged as the union of the readings.
//
// There are two POSIX readings. dash's: a $'…' is a $ and a quoted string. busybox sh's:
// it decodes $'…' its own way (decodeBusyboxANSIC) and, unlike dash, runs process
// substitutions, whose code it reads as POSIX sh (no brace expansion, time is a program).
//
// mvdan.cc/sh's POSIX parser refuses some bash syntax that the POSIX shells read in a
// known way, so the text is first rewritten where they do: `{fd}>f cmd` is a program
// named {fd} to them ({fd} >f cmd), `a &>f b` is `a &` and `>f b` to dash, `function f {`
// is a program named function with two arguments to dash (\function f {), and a process
// substitution is a file name (/dev/fd/63) whose code busybox runs.

// bashOnlyNode reports whether a node of the tree is syntax that a POSIX shell reads
// differently; readings asks it of every node.
func bashOnlyNode(n syntax.Node) bool {
	switch x := n.(type) {
	case *syntax.SglQuoted:
		return x.Dollar
	case *syntax.DblQuoted:
		return x.Dollar
	case *syntax.ArithmCmd, *syntax.TestClause, *syntax.DeclClause, *syntax.LetClause,
		*syntax.CoprocClause, *syntax.ArrayExpr, *syntax.ProcSubst, *syntax.ExtGlob, *syntax.TimeClause:
		return true
	case *syntax.Word:
		// {a,b} and {1..3}, also with quotes inside ({rm,-r''f,/}); syntax.SplitBraces
		// would change the tree.
		return braceWord(x)
	case *syntax.FuncDecl:
		return x.RsrvWord
	case *syntax.Assign:
		// a[i]=1 and a+=1 are words, so programs, to a POSIX shell.
		return x.Index != nil || x.Append
	case *syntax.Redirect:
		switch x.Op {
		case syntax.RdrAll, syntax.AppAll, syntax.WordHdoc:
			return true
		}
		return x.N != nil && strings.HasPrefix(x.N.Value, "{")
	case *syntax.BinaryCmd:
		return x.Op == syntax.PipeAll
	}
	return false
}

// braceWord reports whether the literal text of a word, its quoted parts left out, reads
// as a brace expansion to bash.
func braceWord(x *syntax.Word) bool {
	open, closed := false, false
	for _, p := range x.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			open = open || strings.Contains(l.Value, "{")
			closed = closed || strings.Contains(l.Value, "}")
		}
	}
	if !open || !closed {
		// Most words: no text to join.
		return false
	}
	var b strings.Builder
	for _, p := range x.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			b.WriteString(l.Value)
		}
	}
	v := b.String()
	return strings.Contains(v, ",") || strings.Contains(v, "..")
}

// posixSource is a command's text as the POSIX shells read it (see posixRewrite).
type posixSource struct {
	text string
	// substs are the codes of the process substitutions, which busybox runs.
	substs []string
	// dollar is set when the command holds $'…', which busybox reads unlike dash.
	dollar bool
	// cmdSubsts are the spans of the command substitutions in text. dash and busybox run
	// a substitution's code one command at a time, up to a syntax error in it: when the
	// POSIX parse fails inside one, what ran before the error is not in any tree.
	cmdSubsts [][2]int
}

// posixRewrite rewrites src, whose bash reading is f, where the POSIX shells read its bash
// syntax in a known way that mvdan.cc/sh's POSIX parser refuses. It must run before the
// walk, which changes the tree.
func posixRewrite(src string, f *syntax.File) posixSource {
	type edit struct {
		at, end int
		with    string
	}
	var edits []edit
	var substs [][2]int
	ps := posixSource{}
	off := func(p syntax.Pos) int { return int(p.Offset()) }
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CmdSubst:
			substs = append(substs, [2]int{off(x.Pos()), off(x.End())})
		case *syntax.SglQuoted:
			ps.dollar = ps.dollar || x.Dollar
		case *syntax.ProcSubst:
			s, e, l, r := off(x.Pos()), off(x.End()), off(x.OpPos)+2, off(x.Rparen)
			if s < e && e <= len(src) && l <= r && r <= len(src) {
				edits = append(edits, edit{s, e, "/dev/fd/63"})
				ps.substs = append(ps.substs, src[l:r])
			}
			return false
		case *syntax.FuncDecl:
			if x.RsrvWord {
				// function f { …; } is a program named function to dash.
				if at := off(x.Pos()); at < len(src) && strings.HasPrefix(src[at:], "function") {
					edits = append(edits, edit{at, at, `\`})
				}
			}
		case *syntax.Redirect:
			if x.N != nil && strings.HasPrefix(x.N.Value, "{") {
				if e := off(x.N.End()); e <= len(src) {
					edits = append(edits, edit{e, e, " "})
				}
			}
			if x.Op == syntax.RdrAll || x.Op == syntax.AppAll {
				if e := off(x.OpPos) + 1; e <= len(src) {
					edits = append(edits, edit{e, e, " "})
				}
			}
		}
		return true
	})
	slices.SortStableFunc(edits, func(a, b edit) int { return a.at - b.at })
	var b strings.Builder
	last := 0
	applied := edits[:0]
	for _, e := range edits {
		if e.at < last {
			continue
		}
		b.WriteString(src[last:e.at])
		b.WriteString(e.with)
		last = e.end
		applied = append(applied, e)
	}
	b.WriteString(src[last:])
	ps.text = b.String()
	// Where an offset of src is in the rewritten text.
	moved := func(o int) int {
		d := 0
		for _, e := range applied {
			switch {
			case e.end <= o && e.at < o:
				d += len(e.with) - (e.end - e.at)
			case e.at < o && o < e.end:
				return e.at + d
			}
		}
		return o + d
	}
	for _, sp := range substs {
		ps.cmdSubsts = append(ps.cmdSubsts, [2]int{moved(sp[0]), moved(sp[1])})
	}
	return ps
}

// posixReading walks the POSIX readings of the top-level command into the same verdict,
// from the state the command starts with.
func (w *walker) posixReading(ps posixSource) {
	pw := &walker{rules: w.rules, cx: w.cx, v: w.v, src: ps.text, st: newState(), active: map[*funcDef]int{}, seen: w.seen}
	pw.seedVars()
	pw.posixWalk(ps, func(f *syntax.File) { pw.stmts(f.Stmts, stdin{}) })
}

// posixWalk walks dash's and busybox's readings of ps with walk, each from the state of
// this moment, then the code of its process substitutions as busybox reads it. A POSIX
// shell runs the lines before a syntax error, so when the whole text does not parse, the
// lines before the one that fails are walked.
func (w *walker) posixWalk(ps posixSource, walk func(*syntax.File)) {
	savedSrc, savedPosix, savedBusybox := w.src, w.posix, w.busybox
	defer func() { w.src, w.posix, w.busybox = savedSrc, savedPosix, savedBusybox }()
	w.posix = true
	f, at := parsePOSIXLines(ps.text)
	for _, sp := range ps.cmdSubsts {
		if at >= sp[0] && at < sp[1] {
			w.add(codeParseError, around(ps.text, at))
			break
		}
	}
	if f != nil {
		w.src = ps.text
		w.busybox = false
		w.isolated(func() { walk(f) })
		if ps.dollar {
			w.busybox = true
			w.isolated(func() { walk(f) })
		}
	}
	w.busybox = true
	for _, code := range ps.substs {
		if w.depth >= maxDepth {
			w.add(codeTooComplex, code)
			return
		}
		f, err := parse(code)
		if err != nil {
			continue
		}
		inner := posixRewrite(code, f)
		w.depth++
		w.isolated(func() {
			w.posixWalk(inner, func(f *syntax.File) { w.stmts(f.Stmts, stdin{}) })
		})
		w.depth--
	}
}

// parsePOSIXLines parses src as POSIX sh, or the lines of it before the first that does
// not parse; nil when there are none. at is the offset of the error, -1 when there is none.
func parsePOSIXLines(src string) (f *syntax.File, at int) {
	f, err := parsePOSIX(src)
	if err == nil {
		return f, -1
	}
	// A syntax error, or bash syntax the parser refuses in POSIX mode (a=(1), function f,
	// <<<): dash and busybox stop at that line too.
	var perr syntax.ParseError
	var lerr syntax.LangError
	line := 0
	switch {
	case errors.As(err, &perr):
		line, at = int(perr.Pos.Line()), int(perr.Pos.Offset())
	case errors.As(err, &lerr):
		line, at = int(lerr.Pos.Line()), int(lerr.Pos.Offset())
	default:
		return nil, -1
	}
	cut := 0
	for i := 1; i < line; i++ {
		next := strings.IndexByte(src[cut:], '\n')
		if next < 0 {
			return nil, at
		}
		cut += next + 1
	}
	if cut <= 0 {
		return nil, at
	}
	if f, err = parsePOSIX(src[:cut]); err != nil {
		return nil, at
	}
	return f, at
}

func parsePOSIX(src string) (*syntax.File, error) {
	return syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(src), "")
}
