package approval

import (
	"fmt"
	"path"
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
		rules: c.rules,
		v:     &v,
		src:   command,
		vars:  map[string]string{},
		funcs: map[string]bool{},
		cwd:   ".",
		seen:  map[string]bool{},
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
	// vars holds variables assigned a literal value earlier in the command, so that
	// `x=rm; $x -rf /` is judged as rm.
	vars map[string]string
	// funcs are functions the command defines; calling one runs a body already walked.
	funcs map[string]bool
	// cwd is where a cd in the command moved to, relative to the workspace or absolute.
	cwd        string
	cwdDynamic bool
	seen       map[string]bool
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

// code judges a string as shell code, as sh -c, eval and ssh HOST CMD run it.
func (w *walker) code(src, seg string, in stdin) {
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
	w.stmts(f.Stmts, in)
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
			w.stmts(x.Stmts, stdin{})
			return false
		case *syntax.ProcSubst:
			in := stdin{}
			if x.Op == syntax.CmdOut {
				in = stdin{kind: inPipe}
			}
			w.stmts(x.Stmts, in)
			return false
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
		w.stmt(c.X, in)
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			w.stmt(c.Y, stdin{kind: inPipe})
		} else {
			w.stmt(c.Y, in)
		}
	case *syntax.Subshell:
		w.stmts(c.Stmts, in)
	case *syntax.Block:
		w.stmts(c.Stmts, in)
	case *syntax.IfClause:
		for cl := c; cl != nil; cl = cl.Else {
			w.stmts(cl.Cond, in)
			w.stmts(cl.Then, in)
		}
	case *syntax.WhileClause:
		w.stmts(c.Cond, in)
		w.stmts(c.Do, in)
	case *syntax.ForClause:
		w.forClause(c, in)
	case *syntax.CaseClause:
		w.substs(c.Word)
		for _, item := range c.Items {
			for _, p := range item.Patterns {
				w.substs(p)
			}
			w.stmts(item.Stmts, in)
		}
	case *syntax.FuncDecl:
		w.funcDecl(c, in)
	case *syntax.DeclClause:
		seg := w.text(c)
		for _, a := range c.Args {
			w.assign(a, seg)
		}
	case *syntax.TimeClause:
		w.stmt(c.Stmt, in)
	case *syntax.CoprocClause:
		w.stmt(c.Stmt, in)
	case *syntax.TestDecl:
		w.stmt(c.Body, in)
	default:
		// [[ ]], (( )), let: only their substitutions run code.
		w.substs(cmd)
	}
}

func (w *walker) forClause(c *syntax.ForClause, in stdin) {
	wi, ok := c.Loop.(*syntax.WordIter)
	if !ok {
		w.substs(c.Loop)
		w.stmts(c.Do, in)
		return
	}
	for _, item := range wi.Items {
		w.substs(item)
	}
	name := wi.Name.Value
	items := w.expandWords(wi.Items)
	literal := len(items) > 0 && len(items) <= maxLoopItems
	for _, it := range items {
		literal = literal && !it.dynamic && !it.glob && !it.tilde
	}
	if !literal {
		delete(w.vars, name)
		w.stmts(c.Do, in)
		return
	}
	// Few literal items: judge the body once per value, so `for d in / ; do rm -rf $d; done`
	// is judged as rm -rf /.
	for _, it := range items {
		w.vars[name] = it.text
		w.stmts(c.Do, in)
	}
	delete(w.vars, name)
}

// funcDecl walks a function body (its code runs when the function is called) and looks
// for the fork bomb shape: a function that calls itself in a pipeline or in the background.
func (w *walker) funcDecl(c *syntax.FuncDecl, in stdin) {
	name := ""
	if c.Name != nil {
		name = c.Name.Value
		w.funcs[name] = true
	}
	selfCall, spreads := false, false
	syntax.Walk(c.Body, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CallExpr:
			if len(x.Args) > 0 && name != "" && unescapeLit(x.Args[0].Lit()) == name {
				selfCall = true
			}
		case *syntax.BinaryCmd:
			if x.Op == syntax.Pipe || x.Op == syntax.PipeAll {
				spreads = true
			}
		case *syntax.Stmt:
			if x.Background {
				spreads = true
			}
		}
		return true
	})
	if selfCall && spreads {
		w.add(codeForkBomb, w.text(c))
	}
	w.stmt(c.Body, in)
}

// assign records a variable's value when it is literal and flags variables that change
// which code runs.
func (w *walker) assign(a *syntax.Assign, seg string) {
	if a == nil || a.Name == nil {
		if a != nil {
			w.substs(a.Value)
		}
		return
	}
	name := a.Name.Value
	if w.rules.hijackEnv[name] {
		w.add(codeEnvHijack, seg)
	}
	switch {
	case a.Value != nil:
		w.substs(a.Value)
		v := w.resolve(a.Value)
		if v.dynamic || a.Append || a.Index != nil {
			delete(w.vars, name)
		} else {
			w.vars[name] = v.text
		}
	case a.Array != nil:
		w.substs(a.Array)
		delete(w.vars, name)
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
	for _, a := range c.Assigns {
		w.assign(a, seg)
	}
	for _, word := range c.Args {
		w.substs(word)
	}
	if len(c.Args) == 0 {
		return
	}
	args := w.expandWords(c.Args)
	for _, a := range args {
		if a.ifs {
			// rm${IFS}-rf${IFS}/ is rm -rf / once the shell splits it.
			parts := make([]string, len(args))
			for i, a := range args {
				parts[i] = a.text
			}
			w.code(strings.ReplaceAll(strings.Join(parts, " "), dynamicMark, "$x"), seg, in)
			return
		}
	}
	w.run(args, in, seg)
}

// run judges an argument vector: a program and its arguments. Wrappers (sudo, xargs, env…)
// come back here with the command they run.
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
	if w.funcs[name.text] {
		return
	}
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
	flagAt   []int       // index in args of each flag
	values   [][2]string // flag, value
	valueArg map[int]bool
	operands []arg
	// afterDashDash are the arguments after a "--".
	afterDashDash []arg
	dashDash      bool
	execs         [][]arg // find -exec … ;
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
				s.values = append(s.values, [2]string{t, args[i+1].text})
				s.valueArg[i+1] = true
				i++
			} else if name, v, ok := strings.Cut(t, "="); ok && strings.HasPrefix(t, "--") {
				s.values = append(s.values, [2]string{name, v})
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

// takesValue reports whether a flag consumes the next argument.
func takesValue(p *program, t string) bool {
	if len(p.valueFlags) == 0 {
		return false
	}
	if strings.HasPrefix(t, "--") {
		return !strings.Contains(t, "=") && p.valueFlags[t]
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

// flagKeys returns the rule keys a flag argument stands for: --force=x is --force, -rf is
// -r and -f, and a key that matches exactly (find's -delete) wins.
func flagKeys(t string, has func(string) bool) []string {
	if has(t) {
		return []string{t}
	}
	if strings.HasPrefix(t, "--") {
		if name, _, ok := strings.Cut(t, "="); ok && has(name) {
			return []string{name}
		}
		return nil
	}
	var out []string
	for i := 1; i < len(t); i++ {
		k := "-" + t[i:i+1]
		if has(k) {
			out = append(out, k)
		}
	}
	return out
}

func hasAny(flags []string, m map[string]bool) bool {
	if len(m) == 0 {
		return false
	}
	for _, f := range flags {
		if len(flagKeys(f, func(k string) bool { return m[k] })) > 0 {
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
		for _, k := range flagKeys(f, func(k string) bool { _, ok := p.flags[k]; return ok }) {
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
	if hasAny(s.flags, p.queryFlags) {
		return
	}
	w.add(reason, seg)
	w.flagReasons(p, s.flags, seg)
	w.operandReasons(p, args, s, seg)
	if risk := w.rules.reasons[reason].risk; risk >= RiskNetwork || p.language != "" || p.wrapper != "" {
		w.metadataScan(args, seg)
	}
	switch {
	case p.wrapper != "":
		w.wrapper(p, s, in, seg)
	case p.language != "":
		w.codeRunner(p, s, in, seg)
	default:
		w.operandPaths(p, s, seg)
	}
	for _, inner := range s.execs {
		w.findExec(inner, s.operands, in, seg)
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
		if w.rules.hijackEnv[name] {
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
	if p.wrapper == wrapShell {
		parts := make([]string, len(inner))
		for i, a := range inner {
			if a.dynamic {
				w.add(codeDynamicCommand, seg)
				return
			}
			parts[i] = a.text
		}
		w.code(strings.Join(parts, " "), seg, in)
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
	has := func(k string) bool { return p.codeFlags[k] }
	for fi, f := range s.flags {
		keys := flagKeys(f, has)
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
		} else if k := keys[0]; len(keys) == 1 && !strings.HasSuffix(f, k[1:]) && p.language != "shell" {
			i := strings.Index(f[1:], k[1:]) + 1 + len(k) - 1
			code = &arg{text: f[i:]}
		}
		if next := s.flagAt[fi] + 1; code == nil && next < len(s.args) {
			code = &s.args[next]
		}
		if code == nil {
			return true
		}
		w.judgeCode(p.language, *code, in, seg)
		return true
	}
	return false
}

// judgeCode judges code handed to an interpreter. Shell code is parsed and walked; other
// languages are matched against their patterns.
func (w *walker) judgeCode(lang string, code arg, in stdin, seg string) {
	if code.dynamic {
		w.add(codeDynamicCommand, seg)
		return
	}
	if lang == "shell" || lang == "" {
		w.code(code.text, seg, in)
		return
	}
	l := w.rules.languages[lang]
	w.add(l.Reason, seg)
	norm := strings.Join(strings.Fields(strings.ToLower(code.text)), " ")
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
	if w.codeFlag(p, s, in, seg) {
		return
	}
	ops := s.operands
	if p.codeOperand {
		if hasAny(s.flags, p.skipUnless) {
			w.add(codeRunsScript, seg)
		} else if len(ops) > 0 {
			if ops[0].text != "-" {
				w.judgeCode(p.language, ops[0], in, seg)
			}
			ops = ops[1:]
		}
		for _, a := range ops {
			w.pathEffect(a, p.paths, false, seg)
		}
		return
	}
	if p.assignCode {
		for _, a := range ops {
			if _, v, ok := strings.Cut(a.text, "="); ok && !a.dynamic {
				w.judgeCode(p.language, arg{text: v}, stdin{}, seg)
			} else if a.dynamic {
				w.add(codeDynamicCommand, seg)
			}
		}
		return
	}
	if !p.stdinCode {
		return
	}
	fromStdin := hasAny(s.flags, p.stdinFlags)
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
		w.judgeCode(p.language, arg{text: in.text}, stdin{}, seg)
	case inFile:
		w.add(codeRunsScript, seg)
	default:
		w.add(codeInteractive, seg)
	}
}

// operandPaths applies the rule's path mode to the operands.
func (w *walker) operandPaths(p *program, s scanned, seg string) {
	mode := p.paths
	for _, f := range s.flags {
		for _, k := range flagKeys(f, func(k string) bool { _, ok := p.pathFlags[k]; return ok }) {
			mode = p.pathFlags[k]
		}
	}
	recursive := hasAny(s.flags, p.recursive) && !hasAny(s.flags, p.filters)
	ops := s.operands
	if p.expression && len(ops) == 0 {
		ops = []arg{{text: "."}}
	}
	if p.skip > 0 && !hasAny(s.flags, p.skipUnless) {
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
		case pathsDest:
			continue
		default:
			w.pathEffect(a, mode, recursive, seg)
		}
	}
	if mode == pathsDest && len(ops) > 0 {
		for _, a := range ops[:len(ops)-1] {
			w.pathEffect(a, pathsRead, false, seg)
		}
		w.pathEffect(ops[len(ops)-1], pathsWrite, false, seg)
	}
	for _, v := range s.values {
		if p.mountFlags[v[0]] {
			w.mount(v[1], seg)
		}
	}
	if p.uploads {
		for _, a := range s.operands {
			w.upload(a, seg)
		}
		for _, v := range s.values {
			w.upload(arg{text: v[1]}, seg)
		}
	}
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
func (w *walker) findExec(inner []arg, roots []arg, in stdin, seg string) {
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
		w.cwd, w.cwdDynamic = "~", false
		return
	}
	a := ops[0]
	if a.dynamic || a.text == "-" {
		w.cwdDynamic = true
		return
	}
	t := a.text
	if strings.HasPrefix(t, "~") && !a.tilde {
		t = "./" + t
	}
	if strings.HasPrefix(t, "/") || strings.HasPrefix(t, "~") {
		w.cwd = cleanAbs(t)
	} else {
		w.cwd = path.Join(w.cwd, t)
	}
}
