package shellrisk

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

func (w *walker) stmts(list []*syntax.Stmt, in stdin) {
	for _, s := range list {
		w.stmt(s, in)
	}
}

func (w *walker) stmt(s *syntax.Stmt, in stdin) {
	if s == nil {
		return
	}
	w.steps++
	if w.steps > maxSteps {
		w.add(codeTooComplex, w.src)
		return
	}
	if s.Background || s.Coprocess {
		// A background job runs in a subshell, alongside whatever follows.
		w.spread++
		w.isolated(func() {
			in := w.redirects(s.Redirs, in)
			w.command(s.Cmd, in)
		})
		w.spread--
		return
	}
	saved := w.leak
	w.leak = false
	in = w.redirects(s.Redirs, in)
	w.command(s.Cmd, in)
	if w.leak && len(s.Redirs) > 0 {
		// cat .env > x: x now holds the secret.
		w.taintRedirects(s.Redirs)
	}
	w.leak = saved || w.leak
}

// taintRedirects marks the files a statement that read a secret writes by redirection.
func (w *walker) taintRedirects(redirs []*syntax.Redirect) {
	for _, r := range redirs {
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.AppAll:
		default:
			continue
		}
		if a := w.resolve(r.Word); !a.dynamic && !a.procSubst {
			if w.tainted == nil {
				w.tainted = map[string]bool{}
			}
			w.tainted[w.classifyPath(a).clean] = true
		}
	}
}

// substs walks the commands inside a node's command and process substitutions: they run
// wherever they appear, even inside double quotes or a here-document.
func (w *walker) substs(node syntax.Node) {
	switch x := node.(type) {
	case nil:
		return
	case *syntax.Word:
		if x == nil || plainWord(x) {
			return
		}
	case *syntax.ArrayExpr:
		if x == nil {
			return
		}
	}
	if w.visitSubsts == nil {
		// One closure per walk: syntax.Walk keeps it, so each call would allocate one.
		w.visitSubsts = w.substNode
	}
	syntax.Walk(node, w.visitSubsts)
}

// plainWord reports whether a word is only literal text, quoted or not: nothing in it
// expands or runs.
func plainWord(word *syntax.Word) bool {
	for _, p := range word.Parts {
		switch x := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// substNode is substs' visitor of one node.
func (w *walker) substNode(n syntax.Node) bool {
	switch x := n.(type) {
	case *syntax.CmdSubst:
		w.isolated(func() { w.stmts(x.Stmts, stdin{}) })
		return false
	case *syntax.ProcSubst:
		in := stdin{}
		if x.Op == syntax.CmdOut {
			in = stdin{kind: inPipe}
		}
		w.isolated(func() { w.stmts(x.Stmts, in) })
		return false
	case *syntax.ParamExp:
		w.paramCode(x)
		if x.Index != nil {
			w.arithData(x.Index)
		}
		if x.Slice != nil {
			w.arithData(x.Slice.Offset)
			w.arithData(x.Slice.Length)
		}
	case *syntax.ExtGlob:
		// @(a|$(cmd)): the parser keeps the pattern as text, the shell expands it.
		if p := x.Pattern.Value; strings.Contains(p, "$(") || strings.Contains(p, "`") {
			w.code(`: "`+strings.ReplaceAll(p, `"`, `\"`)+`"`, w.text(x), stdin{}, true)
		}
	case *syntax.ArithmExp:
		w.arithCode(x.X)
		w.arithData(x.X)
	case *syntax.ArithmCmd:
		w.arithCode(x.X)
		w.arithData(x.X)
	case *syntax.LetClause:
		for _, e := range x.Exprs {
			w.arithCode(e)
			w.arithData(e)
		}
	case *syntax.CStyleLoop:
		for _, e := range []syntax.ArithmExpr{x.Init, x.Cond, x.Post} {
			w.arithCode(e)
			w.arithData(e)
		}
	case *syntax.BinaryTest:
		if arithTest(x.Op) {
			for _, e := range []syntax.TestExpr{x.X, x.Y} {
				if word, ok := e.(*syntax.Word); ok {
					w.arithWord(word)
				}
			}
		}
	}
	return true
}

func (w *walker) command(cmd syntax.Command, in stdin) {
	switch c := cmd.(type) {
	case nil:
	case *syntax.CallExpr:
		w.call(c, in)
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.Pipe, syntax.PipeAll:
			// Each part of a pipeline runs in a subshell; with lastpipe the last may not.
			w.spread++
			saved := w.leak
			w.leak = in.secret
			w.isolated(func() { w.stmt(c.X, in) })
			leaked := w.leak
			w.leak = saved || leaked
			w.branches(true, func() { w.stmt(c.Y, stdin{kind: inPipe, secret: leaked}) })
			w.spread--
		default:
			// a && b && c: each runs only when the ones before it succeeded, so they are
			// walked in order, but all but the first may not run at all.
			chain := []*syntax.Stmt{c.Y}
			first := c.X
			for {
				x, ok := first.Cmd.(*syntax.BinaryCmd)
				if !ok || x.Op != c.Op || first.Negated || first.Background || first.Coprocess || len(first.Redirs) > 0 {
					break
				}
				chain = append(chain, x.Y)
				first = x.X
			}
			slices.Reverse(chain)
			w.stmt(first, in)
			w.branches(true, func() { w.stmts(chain, in) })
		}
	case *syntax.Subshell:
		w.isolated(func() { w.stmts(c.Stmts, in) })
	case *syntax.Block:
		w.stmts(c.Stmts, in)
	case *syntax.IfClause:
		w.ifClause(c, in)
	case *syntax.WhileClause:
		w.stmts(c.Cond, in)
		// The body may run any number of times: twice is enough for an assignment in one
		// pass to reach the next (x=/; while …; do rm -rf $x; x=…; done).
		for range 2 {
			w.branches(true, func() {
				w.stmts(c.Do, in)
				w.stmts(c.Cond, in)
			})
		}
	case *syntax.ForClause:
		w.forClause(c, in)
	case *syntax.CaseClause:
		w.substs(c.Word)
		fns := make([]func(), 0, len(c.Items))
		for _, item := range c.Items {
			fns = append(fns, func() {
				for _, p := range item.Patterns {
					w.substs(p)
				}
				w.stmts(item.Stmts, in)
			})
		}
		w.branches(true, fns...)
	case *syntax.FuncDecl:
		w.funcDecl(c, in)
	case *syntax.DeclClause:
		w.declClause(c)
	case *syntax.TimeClause:
		w.stmt(c.Stmt, in)
	case *syntax.CoprocClause:
		w.spread++
		w.isolated(func() { w.stmt(c.Stmt, in) })
		w.spread--
	case *syntax.TestDecl:
		w.isolated(func() { w.stmt(c.Body, in) })
	default:
		// [[ ]], (( )), let: only their substitutions run code.
		w.substs(cmd)
	}
}

// ifClause walks an if: its first condition always runs, each branch may.
func (w *walker) ifClause(c *syntax.IfClause, in stdin) {
	if len(c.Cond) == 0 {
		// The final else.
		w.stmts(c.Then, in)
		return
	}
	w.stmts(c.Cond, in)
	fns := []func(){func() { w.stmts(c.Then, in) }}
	if c.Else != nil {
		fns = append(fns, func() { w.ifClause(c.Else, in) })
	}
	w.branches(c.Else == nil, fns...)
}

func (w *walker) forClause(c *syntax.ForClause, in stdin) {
	wi, ok := c.Loop.(*syntax.WordIter)
	if !ok {
		w.substs(c.Loop)
		for range 2 {
			w.branches(true, func() { w.stmts(c.Do, in) })
		}
		return
	}
	for _, item := range wi.Items {
		w.substs(item)
	}
	name := wi.Name.Value
	items := w.expandWords(wi.Items)
	literal := len(items) > 0 && len(items) <= maxLoopItems
	for _, it := range items {
		literal = literal && !it.dynamic && !it.glob
	}
	if !literal {
		// The items of for i in $(cat list) are data; so are file names a glob matches.
		data := false
		for _, it := range items {
			data = data || it.glob
		}
		for _, item := range wi.Items {
			data = data || w.fromData(item)
		}
		setLoopVar := func() { w.forgetAs(name, data) }
		setLoopVar()
		for range 2 {
			w.branches(true, func() {
				setLoopVar()
				w.stmts(c.Do, in)
			})
		}
		setLoopVar()
		return
	}
	// Few literal items: judge the body once per value, so `for d in / ; do rm -rf $d; done`
	// is judged as rm -rf /.
	for _, it := range items {
		w.setVar(name, varValue{text: it.text, tilde: it.tilde})
		w.stmts(c.Do, in)
	}
	w.forget(name)
}

// funcDecl records a function and walks its body once as it stands, in a copy of the
// state: a call walks it again with the state of that moment. A call to the function from
// a pipeline or a background job inside its own body is a fork bomb.
func (w *walker) funcDecl(c *syntax.FuncDecl, in stdin) {
	if c.Name == nil {
		w.isolated(func() { w.stmt(c.Body, in) })
		return
	}
	def := &funcDef{body: c.Body, src: w.src}
	w.st.ownFuncs()[c.Name.Value] = def
	w.isolated(func() { w.callFunc(c.Name.Value, def, in, w.text(c)) })
}

// callFunc walks a function's body for a call.
func (w *walker) callFunc(name string, def *funcDef, in stdin, seg string) {
	if entry, ok := w.active[def]; ok {
		if w.spread > entry {
			w.add(codeForkBomb, seg)
		}
		return
	}
	if w.depth >= maxDepth {
		w.add(codeTooComplex, seg)
		return
	}
	w.active[def] = w.spread
	saved := w.src
	prev, hadPrev := w.st.vars["FUNCNAME"]
	w.src = def.src
	w.depth++
	w.setVar("FUNCNAME", varValue{text: name})
	w.stmt(def.body, in)
	w.depth--
	w.src = saved
	if hadPrev {
		w.setVar("FUNCNAME", prev)
	} else {
		w.forget("FUNCNAME")
	}
	delete(w.active, def)
}

// assign records a variable's value when it is literal and flags variables that change
// which code runs.
func (w *walker) assign(a *syntax.Assign, seg string) {
	if a == nil {
		return
	}
	if a.Name == nil {
		// export "NAME=VALUE": the word says what is assigned.
		if a.Value != nil {
			w.substs(a.Value)
			w.assignText(w.resolve(a.Value), seg)
		}
		return
	}
	name := a.Name.Value
	if w.rules.hijacks(name) {
		w.add(codeEnvHijack, seg)
	}
	switch {
	case a.Value != nil:
		w.substs(a.Value)
		v := w.resolve(a.Value)
		// x='a[$(rm -rf ~)]' is text now, and code as soon as the shell evaluates x as a
		// number (declare -i, an array index, a nameref).
		w.subscriptCode(v, seg)
		if !v.dynamic {
			w.hookCode(name, v.text, seg)
		}
		if a.Index != nil {
			w.arithData(a.Index)
		}
		if w.st.ints[name] {
			// declare -i y; y=$x: the value is evaluated as a number.
			w.arithWord(a.Value)
		}
		switch {
		case v.jobPID && v.text == dynamicMark && !a.Append && a.Index == nil:
			w.setVar(name, varValue{jobPID: true})
		case v.dynamic || a.Append || a.Index != nil:
			w.forgetAs(name, w.fromData(a.Value) || a.Append && w.st.data[name])
		default:
			w.setVar(name, varValue{text: v.text, tilde: v.tilde})
		}
	case a.Array != nil:
		w.substs(a.Array)
		w.forget(name)
	case !a.Naked:
		// x= assigns the empty string (IFS= turns field splitting off).
		if a.Append || a.Index != nil {
			w.forget(name)
		} else {
			w.setVar(name, varValue{})
		}
	}
}

// assignText follows an assignment written as one word, as declare and export take it:
// "NAME=VALUE" (quoted, so the parser does not see an assignment) or a flag.
func (w *walker) assignText(v arg, seg string) {
	w.subscriptCode(v, seg)
	name, val, ok := strings.Cut(v.text, "=")
	if !ok {
		return
	}
	name = strings.TrimSuffix(name, "+")
	base, _, indexed := strings.Cut(name, "[")
	if strings.Contains(base, dynamicMark) {
		// export "$name=…": any variable, PATH included.
		w.add(codeEnvHijack, seg)
		w.forgetVars()
		return
	}
	if w.rules.hijacks(base) {
		w.add(codeEnvHijack, seg)
	}
	if v.dynamic || indexed || strings.HasSuffix(name, "+") {
		w.forget(base)
		return
	}
	w.setVar(base, varValue{text: val})
}

// declClause follows declare, export, local, readonly, typeset and nameref.
func (w *walker) declClause(c *syntax.DeclClause) {
	seg := w.text(c)
	nameref := c.Variant != nil && c.Variant.Value == "nameref"
	integer := false
	for _, a := range c.Args {
		if a == nil {
			continue
		}
		if a.Name == nil && a.Value != nil {
			w.substs(a.Value)
			v := w.resolve(a.Value)
			if !v.dynamic && len(v.text) > 1 && (v.text[0] == '-' || v.text[0] == '+') {
				nameref = nameref || (v.text[0] == '-' && strings.Contains(v.text, "n"))
				integer = integer || (v.text[0] == '-' && strings.Contains(v.text, "i"))
				continue
			}
			w.assignText(v, seg)
			continue
		}
		if integer && a.Name != nil {
			w.st.ints = withKey(w.st.ints, a.Name.Value)
		}
		w.assign(a, seg)
	}
	if nameref {
		// declare -n x=y: assigning x now assigns y.
		w.st.noVars = true
		w.forgetVars()
	}
}

// redirects judges a statement's redirections and returns the standard input its command
// will read.
func (w *walker) redirects(redirs []*syntax.Redirect, in stdin) stdin {
	for _, r := range redirs {
		w.substs(r.Word)
		w.substs(r.Hdoc)
		seg := w.text(r)
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
			syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
			w.redirectWrite(r.Word, seg)
		case syntax.DplOut:
			if t := r.Word.Lit(); t != "-" && !isNumber(t) {
				w.redirectWrite(r.Word, seg)
			}
		case syntax.RdrIn:
			a := w.resolve(r.Word)
			if a.procSubst {
				in = stdin{kind: inPipe}
				continue
			}
			w.pathEffect(a, pathsRead, false, seg)
			if w.namesAirlockState(a.text) {
				w.add(codeAirlockState, seg)
			}
			if info := w.classifyPath(a); info.class == pathSocket {
				w.add(codeRawSocket, seg)
			}
			in = stdin{kind: inFile}
		case syntax.DplIn:
			if t := r.Word.Lit(); t != "0" && t != "-" {
				in = stdin{kind: inPipe}
			}
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc == nil {
				in = stdin{kind: inText, known: true}
				continue
			}
			a := w.resolve(r.Hdoc)
			in = stdin{kind: inText, text: a.text, known: !a.dynamic}
		case syntax.WordHdoc:
			a := w.resolve(r.Word)
			in = stdin{kind: inText, text: a.text + "\n", known: !a.dynamic}
		}
	}
	return in
}

func (w *walker) redirectWrite(word *syntax.Word, seg string) {
	if word == nil {
		return
	}
	a := w.resolve(word)
	if a.procSubst {
		return
	}
	info := w.classifyPath(a)
	if w.namesAirlockState(a.text) || len(w.cx.Protected) > 0 && w.cx.reachesProtected(info, false) {
		w.add(codeAirlockState, seg)
	}
	switch info.class {
	case pathHarmless:
		return
	case pathWorkspace, pathWorkspaceRoot, pathScratch:
		w.add(codeRedirectWrite, seg)
	}
	w.writeEffect(info, false, seg)
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
