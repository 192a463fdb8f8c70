package approval

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Limits that keep classification cheap on hostile input. Beyond them the verdict is
// too_complex, which is never safe.
const (
	maxCommandBytes = 1 << 20 // bytes of command text
	maxDepth        = 12      // nested code: sh -c "eval 'bash -c …'"
	maxCalls        = 4096    // simple commands judged, across all nesting
	maxSteps        = 1 << 16 // statements walked, across loops tried per item
	maxSegment      = 400     // bytes of source text kept in a reason
	maxLoopItems    = 4       // for-loop items tried one by one as the loop variable
	maxFindRoots    = 4       // find roots substituted for {} in -exec
)

// Classifier judges shell commands against a rule set. It is safe for concurrent use.
type Classifier struct {
	rules *ruleSet
}

// NewClassifier builds a classifier from the embedded rules with extra applied on top (see
// [RulesConfig] for how entries combine).
func NewClassifier(extra RulesConfig) (*Classifier, error) {
	rc, err := DefaultRules()
	if err != nil {
		return nil, err
	}
	rc.merge(extra)
	rs, err := compile(rc)
	if err != nil {
		return nil, err
	}
	return &Classifier{rules: rs}, nil
}

var defaultClassifier = sync.OnceValues(func() (*Classifier, error) {
	return NewClassifier(RulesConfig{})
})

// Classify judges command with the embedded rules.
func Classify(command string) Verdict {
	c, err := defaultClassifier()
	if err != nil {
		// The embedded rules are checked by the tests; should they ever fail to load, no
		// command is safe.
		return Verdict{Command: command, Risk: RiskDangerous, Parsed: false,
			Reasons: []Reason{{Code: "rules_error", Segment: err.Error(), Risk: RiskDangerous}}}
	}
	return c.Classify(command)
}

// Classify parses command as bash and judges every statement in it. The verdict's risk is
// the highest risk of its reasons; a command that cannot be parsed is never safe.
func (c *Classifier) Classify(command string) Verdict {
	v := Verdict{Command: command, Reasons: []Reason{}, Parsed: true}
	w := &walker{
		rules:  c.rules,
		v:      &v,
		src:    command,
		st:     newState(),
		active: map[string]int{},
		seen:   map[string]bool{},
	}
	if len(command) > maxCommandBytes {
		v.Parsed = false
		w.add(codeTooComplex, command)
	} else if f, err := parse(command); err != nil {
		v.Parsed = false
		w.add(codeParseError, command)
	} else {
		w.stmts(f.Stmts, stdin{})
	}
	if !v.Parsed && v.Risk < RiskExec {
		// Whatever the rules say about parse errors, text that was not understood does not run
		// unasked.
		v.Risk = RiskExec
	}
	return v
}

func parse(src string) (*syntax.File, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return nil, fmt.Errorf("parse command: %w", err)
	}
	return f, nil
}

// stdinKind says where a command's standard input comes from, which matters for programs
// that read code from it.
type stdinKind int

const (
	inTerminal stdinKind = iota // inherited: nothing known
	inPipe                      // the output of another command
	inText                      // a here-document or here-string
	inFile                      // a file, < file
)

type stdin struct {
	kind  stdinKind
	text  string
	known bool // text holds no expansion
}

// walker carries the state of one classification.
type walker struct {
	rules *ruleSet
	v     *Verdict
	src   string // source text of the code being walked, for segments
	depth int
	calls int
	steps int
	// st is what the shell knows at this point: variables assigned a literal value, so
	// that `x=rm; $x -rf /` is judged as rm, functions, and where a cd moved to.
	st shellState
	// active are the functions being walked, each with the spread at its entry: a call to
	// one of them from a pipeline or a background job inside it multiplies processes.
	active map[string]int
	// spread counts the pipelines and background jobs being walked.
	spread int
	// splitting is set while words are expanded as arguments, where the shell splits
	// unquoted values into fields.
	splitting bool
	seen      map[string]bool
}

// add records a reason, once per code and segment.
func (w *walker) add(code, seg string) {
	if code == "" {
		return
	}
	info, ok := w.rules.reasons[code]
	if !ok {
		info = reasonInfo{risk: RiskDangerous}
	}
	if info.risk == RiskSafe && !info.hardDeny {
		return
	}
	if len(seg) > maxSegment {
		seg = seg[:maxSegment] + "…"
	}
	key := code + "\x00" + seg
	if w.seen[key] {
		return
	}
	w.seen[key] = true
	w.v.Reasons = append(w.v.Reasons, Reason{Code: code, Segment: seg, Risk: info.risk, HardDeny: info.hardDeny})
	if info.risk > w.v.Risk {
		w.v.Risk = info.risk
	}
	if info.hardDeny {
		w.v.HardDeny = true
	}
}

// text returns the source of a node.
func (w *walker) text(n syntax.Node) string {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || e > len(w.src) || s >= e {
		return strings.TrimSpace(w.src)
	}
	return w.src[s:e]
}

// code judges a string as shell code, as sh -c, eval and ssh HOST CMD run it. shared is
// true when the code runs in the calling shell (eval, source), whose state it changes;
// otherwise it runs in another process.
func (w *walker) code(src, seg string, in stdin, shared bool) {
	if w.depth >= maxDepth {
		w.add(codeTooComplex, seg)
		return
	}
	f, err := parse(src)
	if err != nil {
		w.add(codeParseError, seg)
		return
	}
	saved := w.src
	w.src = src
	w.depth++
	if shared {
		w.stmts(f.Stmts, in)
	} else {
		w.child(func() { w.stmts(f.Stmts, in) })
	}
	w.depth--
	w.src = saved
}

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
	in = w.redirects(s.Redirs, in)
	w.command(s.Cmd, in)
}

// substs walks the commands inside a node's command and process substitutions: they run
// wherever they appear, even inside double quotes or a here-document.
func (w *walker) substs(node syntax.Node) {
	switch x := node.(type) {
	case nil:
		return
	case *syntax.Word:
		if x == nil {
			return
		}
	case *syntax.ArrayExpr:
		if x == nil {
			return
		}
	}
	syntax.Walk(node, func(n syntax.Node) bool {
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
		case *syntax.ArithmExp:
			w.arithCode(x.X)
		case *syntax.ArithmCmd:
			w.arithCode(x.X)
		case *syntax.LetClause:
			for _, e := range x.Exprs {
				w.arithCode(e)
			}
		}
		return true
	})
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
			w.isolated(func() { w.stmt(c.X, in) })
			w.branches(true, func() { w.stmt(c.Y, stdin{kind: inPipe}) })
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
		w.forget(name)
		for range 2 {
			w.branches(true, func() {
				w.forget(name)
				w.stmts(c.Do, in)
			})
		}
		w.forget(name)
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
	w.st.funcs[c.Name.Value] = def
	w.isolated(func() { w.callFunc(c.Name.Value, def, in, w.text(c)) })
}

// callFunc walks a function's body for a call.
func (w *walker) callFunc(name string, def *funcDef, in stdin, seg string) {
	if entry, ok := w.active[name]; ok {
		if w.spread > entry {
			w.add(codeForkBomb, seg)
		}
		return
	}
	if w.depth >= maxDepth {
		w.add(codeTooComplex, seg)
		return
	}
	w.active[name] = w.spread
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
	delete(w.active, name)
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
		if v.dynamic || a.Append || a.Index != nil {
			w.forget(name)
		} else {
			w.setVar(name, varValue{text: v.text, tilde: v.tilde})
		}
	case a.Array != nil:
		w.substs(a.Array)
		w.forget(name)
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
		w.st.vars = map[string]varValue{}
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
	for _, a := range c.Args {
		if a == nil {
			continue
		}
		if a.Name == nil && a.Value != nil {
			w.substs(a.Value)
			v := w.resolve(a.Value)
			if !v.dynamic && len(v.text) > 1 && (v.text[0] == '-' || v.text[0] == '+') {
				nameref = nameref || (v.text[0] == '-' && strings.Contains(v.text, "n"))
				continue
			}
			w.assignText(v, seg)
			continue
		}
		w.assign(a, seg)
	}
	if nameref {
		// declare -n x=y: assigning x now assigns y.
		w.st.noVars = true
		w.st.vars = map[string]varValue{}
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
	if w.namesAirlockState(a.text) {
		w.add(codeAirlockState, seg)
	}
	info := w.classifyPath(a)
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

// call judges one simple command.
func (w *walker) call(c *syntax.CallExpr, in stdin) {
	seg := w.text(c)
	for _, word := range c.Args {
		w.substs(word)
	}
	if len(c.Args) == 0 {
		for _, a := range c.Assigns {
			w.assign(a, seg)
		}
		return
	}
	// The words are expanded before the assignments in front of them take effect, and
	// those only hold for the command (x=foo true leaves x as it was).
	args := w.expandWords(c.Args)
	type prior struct {
		v  varValue
		ok bool
	}
	var priors map[string]prior
	if len(c.Assigns) > 0 {
		priors = map[string]prior{}
		for _, a := range c.Assigns {
			if a.Name != nil {
				v, ok := w.st.vars[a.Name.Value]
				priors[a.Name.Value] = prior{v, ok}
			}
			w.assign(a, seg)
		}
	}
	w.callArgs(args, in, seg)
	if len(priors) > 0 {
		name := args[0].text
		_, isFunc := w.st.funcs[name]
		for k, p := range priors {
			if p.ok && !specialBuiltins[name] && !isFunc {
				w.setVar(k, p.v)
			} else {
				// A special built-in keeps them in POSIX mode; a function sees them.
				w.forget(k)
			}
		}
	}
}

// callArgs runs an expanded simple command: a function the command defined, or a program.
func (w *walker) callArgs(args []arg, in stdin, seg string) {
	for _, a := range args {
		if a.ifs {
			// rm${IFS}-rf${IFS}/ is rm -rf / once the shell splits it.
			parts := make([]string, len(args))
			for i, a := range args {
				parts[i] = a.text
			}
			w.code(strings.ReplaceAll(strings.Join(parts, " "), dynamicMark, "$x"), seg, in, true)
			return
		}
	}
	name := args[0]
	if def := w.st.funcs[name.text]; def != nil && !name.dynamic && !strings.Contains(name.text, "/") {
		w.calls++
		if w.calls > maxCalls {
			w.add(codeTooComplex, w.src)
			return
		}
		before := maps.Clone(w.st.vars)
		w.callFunc(name.text, def, in, seg)
		// local restores what the function changed; without it the change stays.
		for k, v := range w.st.vars {
			if bv, ok := before[k]; !ok || bv != v {
				w.forget(k)
			}
		}
		return
	}
	w.run(args, in, seg)
}

// run judges an argument vector: a program and its arguments. Wrappers (sudo, xargs, env…)
// come back here with the command they run; they never run a shell function.
func (w *walker) run(args []arg, in stdin, seg string) {
	if len(args) == 0 {
		return
	}
	w.calls++
	if w.calls > maxCalls {
		w.add(codeTooComplex, w.src)
		return
	}
	name := args[0]
	if name.dynamic || name.glob {
		w.add(codeDynamicCommand, seg)
		w.metadataScan(args, seg)
		return
	}
	w.stateEffects(path.Base(name.text), args[1:], seg)
	p, ok := w.lookup(name, seg)
	if !ok {
		w.metadataScan(args, seg)
		return
	}
	w.program(p, args[1:], in, seg)
}

// lookup finds the rule for a program name. A name with a directory is the program it
// names when the directory is a system bin directory; anywhere else it is a script, judged
// also as the program its base name suggests.
func (w *walker) lookup(name arg, seg string) (*program, bool) {
	n := name.text
	if strings.Contains(n, "/") || (name.tilde && strings.HasPrefix(n, "~")) {
		clean := path.Clean(n)
		dir, base := path.Dir(clean), path.Base(clean)
		if !w.rules.binDirs[dir] || name.tilde {
			w.add(codeRunsScript, seg)
			if p, ok := w.find(base); ok {
				return p, true
			}
			return nil, false
		}
		n = base
	}
	if p, ok := w.find(n); ok {
		return p, true
	}
	w.add(codeUnknownProgram, seg)
	return nil, false
}

func (w *walker) find(name string) (*program, bool) {
	for _, cand := range normaliseName(name) {
		if p, ok := w.rules.programs[cand]; ok {
			return p, true
		}
	}
	return nil, false
}

// metadataScan flags a cloud metadata address anywhere in the arguments of a program that
// can reach the network.
func (w *walker) metadataScan(args []arg, seg string) {
	for _, a := range args {
		t := strings.ToLower(a.text)
		for _, h := range w.rules.paths.MetadataHosts {
			if strings.Contains(t, strings.ToLower(h)) {
				w.add(codeMetadataAccess, seg)
				return
			}
		}
	}
}

// scanned is an argument list split into flags, flag values and operands.
type scanned struct {
	args     []arg
	flags    []string
	flagAt   []int // index in args of each flag
	values   []flagValue
	valueArg map[int]bool
	operands []arg
	// afterDashDash are the arguments after a "--".
	afterDashDash []arg
	dashDash      bool
	execs         [][]arg // find -exec … ;
}

// flagValue is a flag and the value given to it: the next argument, or attached (-ofile,
// --output=file).
type flagValue struct {
	flag string
	val  arg
}

// scan splits args the way getopt would. For a wrapper, options end at the first operand:
// what follows belongs to the wrapped command.
func (w *walker) scan(p *program, args []arg, wrapper bool) scanned {
	s := scanned{args: args, valueArg: map[int]bool{}}
	exprStarted := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		t := a.text
		if t == "--" && !a.dynamic {
			s.dashDash = true
			s.afterDashDash = args[i+1:]
			if !p.expression {
				s.operands = append(s.operands, args[i+1:]...)
			}
			break
		}
		if p.execFlags[t] {
			exprStarted = true
			s.flags = append(s.flags, t)
			s.flagAt = append(s.flagAt, i)
			j := i + 1
			for j < len(args) && args[j].text != ";" && args[j].text != "+" {
				j++
			}
			s.execs = append(s.execs, args[i+1:j])
			i = j
			continue
		}
		if isFlag(t) && !a.dynamic {
			// find's -H, -L and -P come before the roots; any other flag starts the expression.
			if p.expression && t != "-H" && t != "-L" && t != "-P" {
				exprStarted = true
			}
			s.flags = append(s.flags, t)
			s.flagAt = append(s.flagAt, i)
			if takesValue(p, t) && i+1 < len(args) {
				s.values = append(s.values, flagValue{longName(p, t), args[i+1]})
				s.valueArg[i+1] = true
				i++
			} else if name, v, ok := strings.Cut(t, "="); ok && (strings.HasPrefix(t, "--") || p.valueFlags[name]) {
				s.values = append(s.values, flagValue{longName(p, name), attached(v)})
			} else if k, v, ok := attachedShort(p, t); ok {
				s.values = append(s.values, flagValue{k, attached(v)})
			}
			continue
		}
		if p.expression && (t == "(" || t == "!" || t == ")" || t == ",") {
			exprStarted = true
			continue
		}
		if wrapper {
			s.operands = append(s.operands, args[i:]...)
			break
		}
		if p.expression && exprStarted {
			continue
		}
		s.operands = append(s.operands, a)
	}
	return s
}

func isFlag(t string) bool {
	return len(t) > 1 && t[0] == '-'
}

// attached makes an argument of a value written inside a flag. A ~ in it is taken to be
// the home directory: some shells and programs expand it.
func attached(v string) arg {
	return arg{text: v, tilde: strings.HasPrefix(v, "~")}
}

// attachedShort splits -ofile into -o and file when -o takes a value.
func attachedShort(p *program, t string) (string, string, bool) {
	if strings.HasPrefix(t, "--") || len(p.valueFlags) == 0 {
		return "", "", false
	}
	for i := 1; i < len(t)-1; i++ {
		if k := "-" + t[i:i+1]; p.valueFlags[k] {
			return k, t[i+1:], true
		}
	}
	return "", "", false
}

// longName expands an abbreviated long flag (--out for --output) to the value flag it
// stands for, as getopt_long does.
func longName(p *program, t string) string {
	if !strings.HasPrefix(t, "--") || p.valueFlags[t] {
		return t
	}
	if ks := prefixKeys(t, func(k string) bool { return p.valueFlags[k] }, p.valueFlags); len(ks) == 1 {
		return ks[0]
	}
	return t
}

// minAbbrev is the shortest abbreviation of a long flag that is matched (--del for
// --delete); getopt_long takes any unambiguous prefix.
const minAbbrev = 2

// prefixKeys returns the long flags in m that t abbreviates.
func prefixKeys[V any](t string, has func(string) bool, m map[string]V) []string {
	if len(t) < 2+minAbbrev {
		return nil
	}
	var out []string
	for k := range m {
		if strings.HasPrefix(k, "--") && strings.HasPrefix(k, t) && has(k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// takesValue reports whether a flag consumes the next argument.
func takesValue(p *program, t string) bool {
	if len(p.valueFlags) == 0 {
		return false
	}
	if strings.HasPrefix(t, "--") {
		return !strings.Contains(t, "=") && p.valueFlags[longName(p, t)]
	}
	if p.valueFlags[t] {
		return true
	}
	for i := 1; i < len(t); i++ {
		if p.valueFlags["-"+t[i:i+1]] {
			return i == len(t)-1
		}
	}
	return false
}

// flagKeys returns the rule keys in m a flag argument stands for: --force=x is --force,
// -rf is -r and -f, and a key that matches exactly (find's -delete) wins. With abbrev, a
// long flag also stands for the keys it abbreviates (--recur for --recursive); flags that
// make a call safer are never matched that way.
func flagKeys[V any](t string, m map[string]V, abbrev bool) []string {
	if len(m) == 0 {
		return nil
	}
	if _, ok := m[t]; ok {
		return []string{t}
	}
	if strings.HasPrefix(t, "--") {
		name, _, _ := strings.Cut(t, "=")
		if _, ok := m[name]; ok {
			return []string{name}
		}
		if abbrev {
			return prefixKeys(name, func(string) bool { return true }, m)
		}
		return nil
	}
	if name, _, ok := strings.Cut(t, "="); ok {
		// Go-style -flag=value.
		if _, ok := m[name]; ok {
			return []string{name}
		}
	}
	var out []string
	for i := 1; i < len(t); i++ {
		k := "-" + t[i:i+1]
		if _, ok := m[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

func hasAny(flags []string, m map[string]bool, abbrev bool) bool {
	if len(m) == 0 {
		return false
	}
	for _, f := range flags {
		if len(flagKeys(f, m, abbrev)) > 0 {
			return true
		}
	}
	return false
}

// descend follows subcommands (git push, docker compose up) to the most specific rule.
// It returns the rule, the arguments after the subcommand and the reason, which a
// subcommand without one inherits from its parent.
func (w *walker) descend(p *program, args []arg, seg string) (*program, []arg, string) {
	reason := p.reason
	for p.subs != nil {
		s := w.scan(p, args, true)
		if len(s.operands) == 0 {
			break
		}
		op := s.operands[0]
		sub := p.subs[op.text]
		if op.dynamic {
			sub = nil
		}
		if sub == nil {
			sub = p.subs["*"]
		}
		if sub == nil {
			break
		}
		w.flagReasons(p, s.flags, seg)
		args = s.operands[1:]
		p = sub
		if p.reason != "" {
			reason = p.reason
		}
	}
	return p, args, reason
}

func (w *walker) flagReasons(p *program, flags []string, seg string) {
	for _, f := range flags {
		for _, k := range flagKeys(f, p.flags, true) {
			w.add(p.flags[k], seg)
		}
	}
}

// program judges a known program with its arguments.
func (w *walker) program(p *program, args []arg, in stdin, seg string) {
	if len(args) == 1 && w.rules.infoFlags[args[0].text] {
		return
	}
	p, args, reason := w.descend(p, args, seg)
	if len(args) == 1 && w.rules.infoFlags[args[0].text] {
		return
	}
	// A wrapper's options end at its first operand, except when its command follows "--".
	s := w.scan(p, args, p.wrapper != "" && p.wrapper != wrapDashDash)
	if hasAny(s.flags, p.queryFlags, false) && !hasAny(s.flags, p.codeFlags, true) {
		// Only prints information; ruby -v -e CODE still runs CODE.
		return
	}
	w.add(reason, seg)
	w.flagReasons(p, s.flags, seg)
	w.valueReasons(p, s, seg)
	w.operandReasons(p, args, s, seg)
	w.airlockScan(args, seg)
	if risk := w.rules.reasons[reason].risk; risk >= RiskNetwork || p.language != "" || p.wrapper != "" {
		w.metadataScan(args, seg)
	}
	w.valuePaths(p, s, seg)
	switch {
	case p.wrapper != "":
		w.wrapper(p, s, in, seg)
	case p.language != "":
		w.codeRunner(p, s, in, seg)
	default:
		w.operandPaths(p, s, s.operands, seg)
	}
	for _, inner := range s.execs {
		w.findExec(inner, s.operands, w.filtered(p, s), in, seg)
	}
	if p.changesDir {
		w.changeDir(s.operands)
	}
}

// operandReasons applies the rule's operand globs (git push origin +main) to every
// argument that is not a flag's value, lower-cased.
func (w *walker) operandReasons(p *program, args []arg, s scanned, seg string) {
	if len(p.operands) == 0 {
		return
	}
	for i, a := range args {
		if s.valueArg[i] || a.dynamic {
			continue
		}
		t := strings.ToLower(a.text)
		for _, o := range p.operands {
			if globMatch(o[0], t) {
				w.add(o[1], seg)
			}
		}
	}
}

// wrapper judges the command a wrapper runs.
func (w *walker) wrapper(p *program, s scanned, in stdin, seg string) {
	w.codeFlag(p, s, in, seg)
	inner := s.operands
	if p.wrapper == wrapDashDash {
		if !s.dashDash {
			return
		}
		inner = s.afterDashDash
	}
	// env NAME=VALUE cmd, sudo NAME=VALUE cmd
	for len(inner) > 0 && !inner[0].dynamic && isAssignment(inner[0].text) {
		name, _, _ := strings.Cut(inner[0].text, "=")
		if w.rules.hijacks(name) {
			w.add(codeEnvHijack, seg)
		}
		inner = inner[1:]
	}
	if p.wrapper != wrapDashDash {
		skip := min(p.skip, len(inner))
		inner = inner[skip:]
	}
	if len(inner) == 0 {
		return
	}
	if p.extraArgs {
		inner = append(inner[:len(inner):len(inner)], arg{text: dynamicMark, dynamic: true})
	}
	for _, v := range s.values {
		if p.chdirFlags[v.flag] {
			// env -C DIR CMD: CMD runs in DIR.
			dir := v.val
			w.isolated(func() {
				w.changeDir([]arg{dir})
				w.runWrapped(p, inner, in, seg)
			})
			return
		}
	}
	w.runWrapped(p, inner, in, seg)
}

// runWrapped judges the command a wrapper runs, after the wrapper's own arguments.
func (w *walker) runWrapped(p *program, inner []arg, in stdin, seg string) {
	if p.wrapper == wrapShell {
		parts := make([]string, len(inner))
		for i, a := range inner {
			if a.dynamic {
				w.add(codeDynamicCommand, seg)
				return
			}
			parts[i] = a.text
		}
		w.code(strings.Join(parts, " "), seg, in, p.sameShell)
		return
	}
	w.run(inner, in, seg)
}

func isAssignment(t string) bool {
	name, _, ok := strings.Cut(t, "=")
	if !ok || name == "" {
		return false
	}
	for i, c := range name {
		if !(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

// codeFlag judges code given through a flag (sh -c CODE, python -c CODE, su -c CODE). It
// reports whether there was such a flag.
func (w *walker) codeFlag(p *program, s scanned, in stdin, seg string) bool {
	if len(p.codeFlags) == 0 {
		return false
	}
	found := false
	for fi, f := range s.flags {
		keys := flagKeys(f, p.codeFlags, true)
		if len(keys) == 0 {
			continue
		}
		// The code is the flag's value: attached (-cCODE, --eval=CODE) or the next argument
		// (bash -ec CODE, su - root -c CODE).
		var code *arg
		if strings.HasPrefix(f, "--") {
			if _, v, ok := strings.Cut(f, "="); ok {
				code = &arg{text: v}
			}
		} else if !(p.language == "shell" && p.stdinCode) {
			// As getopt reads -xeCODE: the first option that takes a value takes the rest.
			// A shell's -c takes none (-cx is -c -x); env -S'CODE' and flock -cCODE do.
			for i := 1; i < len(f); i++ {
				k := "-" + f[i:i+1]
				if p.codeFlags[k] {
					if i+1 < len(f) {
						code = &arg{text: f[i+1:]}
					}
					break
				}
				if p.valueFlags[k] {
					break
				}
			}
		}
		if next := s.flagAt[fi] + 1; code == nil && next < len(s.args) {
			code = &s.args[next]
		}
		found = true
		if code != nil {
			w.judgeCode(p.language, *code, in, seg, p.sameShell)
		}
	}
	return found
}

// judgeCode judges code handed to an interpreter. Shell code is parsed and walked; other
// languages are matched against their patterns.
func (w *walker) judgeCode(lang string, code arg, in stdin, seg string, shared bool) {
	if code.dynamic {
		w.add(codeDynamicCommand, seg)
		return
	}
	if lang == "shell" || lang == "" {
		w.code(code.text, seg, in, shared)
		return
	}
	l := w.rules.languages[lang]
	w.add(l.Reason, seg)
	switch l.Scanner {
	case scannerSed:
		w.sedScript(code.text, seg)
	case scannerAwk:
		w.awkProgram(code.text, seg)
	}
	sep := " "
	if l.StripSpaces {
		// system ("…") is system("…") to awk.
		sep = ""
	}
	norm := strings.Join(strings.Fields(strings.ToLower(code.text)), sep)
	pats := make([]string, 0, len(l.Patterns))
	for pat := range l.Patterns {
		pats = append(pats, pat)
	}
	sort.Strings(pats)
	for _, pat := range pats {
		if strings.Contains(norm, pat) {
			w.add(l.Patterns[pat], seg)
		}
	}
}

// codeRunner judges a shell or interpreter: code from a flag, from an operand, from a
// script file, or from standard input.
func (w *walker) codeRunner(p *program, s scanned, in stdin, seg string) {
	hadFlag := w.codeFlag(p, s, in, seg)
	ops := s.operands
	if p.codeOperand {
		switch {
		case hadFlag:
		case hasAny(s.flags, p.skipUnless, false):
			w.add(codeRunsScript, seg)
		case len(ops) > 0:
			if ops[0].text != "-" {
				w.judgeCode(p.language, ops[0], in, seg, p.sameShell)
			}
			ops = ops[1:]
		}
		w.operandPaths(p, s, ops, seg)
		return
	}
	if hadFlag {
		return
	}
	if p.assignCode {
		for _, a := range ops {
			if _, v, ok := strings.Cut(a.text, "="); ok && !a.dynamic {
				w.judgeCode(p.language, arg{text: v}, stdin{}, seg, false)
			} else if a.dynamic {
				w.add(codeDynamicCommand, seg)
			}
		}
		return
	}
	if !p.stdinCode {
		return
	}
	fromStdin := hasAny(s.flags, p.stdinFlags, true)
	if !fromStdin && len(ops) > 0 && ops[0].text != "-" && ops[0].text != "/dev/stdin" {
		if ops[0].procSubst {
			w.add(codePipeToShell, seg)
		} else {
			w.add(codeRunsScript, seg)
		}
		return
	}
	switch in.kind {
	case inPipe:
		w.add(codePipeToShell, seg)
	case inText:
		if !in.known {
			w.add(codePipeToShell, seg)
			return
		}
		w.judgeCode(p.language, arg{text: in.text}, stdin{}, seg, p.sameShell)
	case inFile:
		w.add(codeRunsScript, seg)
	default:
		w.add(codeInteractive, seg)
	}
}

// operandPaths applies the rule's path mode to the operands.
func (w *walker) operandPaths(p *program, s scanned, ops []arg, seg string) {
	mode := p.paths
	for _, f := range s.flags {
		for _, k := range flagKeys(f, p.pathFlags, true) {
			mode = p.pathFlags[k]
		}
	}
	recursive := hasAny(s.flags, p.recursive, true) && !w.filtered(p, s)
	if p.expression && len(ops) == 0 {
		ops = []arg{{text: "."}}
	}
	if p.skip > 0 && !hasAny(s.flags, p.skipUnless, false) {
		ops = ops[min(p.skip, len(ops)):]
	}
	for _, a := range ops {
		if k, v, ok := strings.Cut(a.text, "="); ok && p.keyed != nil {
			if m, ok := p.keyed[k]; ok {
				va := a
				va.text = v
				va.tilde = strings.HasPrefix(v, "~")
				w.pathEffect(va, m, recursive, seg)
				continue
			}
		}
		if p.keyed != nil {
			continue
		}
		switch mode {
		case pathsDest, pathsIO, pathsDestDelete, pathsLink:
			continue
		default:
			w.pathEffect(a, mode, recursive, seg)
		}
	}
	if len(ops) > 0 {
		last := ops[len(ops)-1]
		switch mode {
		case pathsDest, pathsDestDelete, pathsLink:
			for _, a := range ops[:len(ops)-1] {
				if mode == pathsLink {
					w.linkTarget(a, seg)
				} else {
					w.pathEffect(a, pathsRead, false, seg)
				}
			}
			if mode == pathsDestDelete {
				// rsync --delete empty/ dir empties dir.
				w.pathEffect(last, pathsDelete, true, seg)
			} else {
				w.pathEffect(last, pathsWrite, false, seg)
			}
		case pathsIO:
			// uniq IN OUT, xxd IN OUT: the second operand is written.
			w.pathEffect(ops[0], pathsRead, false, seg)
			if len(ops) > 1 {
				w.pathEffect(ops[1], pathsWrite, false, seg)
			}
		}
	}
	for _, v := range s.values {
		if p.mountFlags[v.flag] {
			w.mount(v.val.text, seg)
		}
	}
	if p.uploads {
		for _, a := range s.operands {
			w.upload(a, seg)
		}
		for _, v := range s.values {
			w.upload(v.val, seg)
		}
	}
}

// valuePaths judges the paths given as flag values (cp -t DIR, sort -o FILE, tar -C DIR).
func (w *walker) valuePaths(p *program, s scanned, seg string) {
	if len(p.valuePaths) == 0 {
		return
	}
	for _, v := range s.values {
		if mode, ok := p.valuePaths[v.flag]; ok {
			w.pathEffect(v.val, mode, false, seg)
		}
	}
}

// valueReasons applies the rule's flag-value globs (ssh -o ProxyCommand=…), lower-cased.
func (w *walker) valueReasons(p *program, s scanned, seg string) {
	if len(p.valueReasons) == 0 {
		return
	}
	for _, v := range s.values {
		t := strings.ToLower(v.val.text)
		for _, vr := range p.valueReasons {
			if vr[0] == v.flag && globMatch(vr[1], t) {
				w.add(vr[2], seg)
			}
		}
	}
}

// filtered reports whether a recursive action is narrowed to some files (find -name
// '*.pyc'). A filter that matches everything (-name '*') narrows nothing.
func (w *walker) filtered(p *program, s scanned) bool {
	if !hasAny(s.flags, p.filters, false) {
		return false
	}
	narrowing := map[string]bool{}
	for _, v := range s.values {
		if p.filters[v.flag] && !v.val.dynamic {
			narrowing[v.flag] = strings.Trim(v.val.text, "*") != "" && v.val.text != ".*"
		}
	}
	for _, f := range s.flags {
		if !p.filters[f] {
			continue
		}
		if n, ok := narrowing[f]; !ok || n {
			return true
		}
	}
	return false
}

// linkTarget judges the target of a symbolic link: a link to /, the home directory, a
// system path or a secret lets a later workspace write or delete reach it.
func (w *walker) linkTarget(a arg, seg string) {
	info := w.classifyPath(a)
	switch {
	case info.secret, info.class == pathRoot, info.class == pathSystemDir,
		info.class == pathSystem, info.class == pathDevice:
		w.add(codeSymlinkOutside, seg)
	case info.class == pathDynamic:
		w.add(codeDynamicPath, seg)
	}
}

// airlockScan flags a command that names Airlock's own state: its ledger, sessions or
// configuration are not the model's to change.
func (w *walker) airlockScan(args []arg, seg string) {
	for _, a := range args {
		if w.namesAirlockState(a.text) {
			w.add(codeAirlockState, seg)
			return
		}
	}
}

func (w *walker) namesAirlockState(t string) bool {
	if _, v, ok := strings.Cut(t, "="); ok && strings.HasPrefix(t, "-") {
		t = v
	}
	for _, c := range strings.Split(t, "/") {
		for _, name := range w.rules.paths.AirlockState {
			if c == name {
				return true
			}
		}
	}
	return false
}

// mount judges the host side of a container volume (-v /:/host, --mount src=/,…).
func (w *walker) mount(spec, seg string) {
	host := spec
	if strings.Contains(spec, "src=") || strings.Contains(spec, "source=") {
		for _, kv := range strings.Split(spec, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok && (k == "src" || k == "source") {
				host = v
			}
		}
	} else if h, _, ok := strings.Cut(spec, ":"); ok {
		host = h
	}
	if !strings.HasPrefix(host, "/") && !strings.HasPrefix(host, "~") {
		return
	}
	info := w.classifyPath(arg{text: host, tilde: strings.HasPrefix(host, "~")})
	switch {
	case info.secret, info.class == pathRoot, info.class == pathSystemDir,
		info.class == pathSystem, info.class == pathDevice:
		w.add(codeHostMount, seg)
	}
}

// upload judges @file arguments of a network client (curl -d @file, -F f=@file).
func (w *walker) upload(a arg, seg string) {
	_, file, ok := strings.Cut(a.text, "@")
	if !ok || file == "" || file == "-" {
		return
	}
	info := w.classifyPath(arg{text: file, tilde: strings.HasPrefix(file, "~"), dynamic: a.dynamic})
	if info.secret {
		w.add(codeExfiltration, seg)
	}
}

// findExec judges the command of find -exec, once per root with {} standing for it, so
// that find / -exec rm -rf {} + is judged as rm -rf /.
//
// When the expression narrows the files (-name __pycache__), {} is never the root itself
// but something below it.
func (w *walker) findExec(inner []arg, roots []arg, filtered bool, in stdin, seg string) {
	if len(inner) == 0 {
		return
	}
	if len(roots) == 0 {
		roots = []arg{{text: "."}}
	}
	if len(roots) > maxFindRoots {
		roots = roots[:maxFindRoots]
	}
	for _, root := range roots {
		if filtered {
			root.text = strings.TrimSuffix(root.text, "/") + "/{}"
			root.glob = false
		}
		cmd := make([]arg, len(inner))
		for i, a := range inner {
			switch {
			case a.text == "{}":
				cmd[i] = root
			case strings.Contains(a.text, "{}"):
				cmd[i] = a
				cmd[i].text = strings.ReplaceAll(a.text, "{}", root.text)
				cmd[i].dynamic = a.dynamic || root.dynamic
			default:
				cmd[i] = a
			}
		}
		w.run(cmd, in, seg)
	}
}

// changeDir follows cd, so later relative paths are judged where they point.
func (w *walker) changeDir(ops []arg) {
	if len(ops) == 0 {
		w.st.cwds, w.st.cwdDynamic = []string{"~"}, false
		return
	}
	a := ops[0]
	if a.dynamic || a.glob || a.text == "-" {
		w.st.cwdDynamic = true
		return
	}
	t := a.text
	if strings.HasPrefix(t, "~") && !a.tilde {
		t = "./" + t
	}
	if strings.HasPrefix(t, "/") || strings.HasPrefix(t, "~") {
		w.st.cwds, w.st.cwdDynamic = []string{cleanAbs(t)}, false
		return
	}
	for i, c := range w.st.cwds {
		w.st.cwds[i] = joinPath(c, t)
	}
}
