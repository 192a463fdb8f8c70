package shellrisk

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

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
	// secret is set when a pipe carries what must not leave: a secret, the environment, a
	// whole tree.
	secret bool
}

// walker carries the state of one classification.
type walker struct {
	rules *ruleSet
	cx    Context
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
	// A function is its definition, not its name: ls() { ls() { rm -rf ~; }; ls; } calls
	// another function from inside the first.
	active map[*funcDef]int
	// spread counts the pipelines and background jobs being walked.
	spread int
	// splitting is set while words are expanded as arguments, where the shell splits
	// unquoted values into fields.
	splitting bool
	seen      map[reasonKey]bool
	// fetching is set while the operands of a network program are judged: what it writes
	// is a download. fetched are the paths downloaded so far in the command, fetchedAny
	// is set when one was saved under a name only the server knows (curl -O).
	// leak is set when the stage being walked reads a secret, the environment or a whole
	// tree; remotes are the git remotes the command added.
	leak    bool
	argLeak bool
	remotes map[string]bool
	tainted map[string]bool
	// aliases are the aliases the command defined: dash, busybox sh and bash as sh expand
	// them, and one ending in a space expands the next word too.
	aliases map[string]string
	// expanding are the aliases being expanded: a shell does not expand one again in its
	// own text (alias ls='ls -l').
	expanding map[string]bool
	// notAlias is set while a program named alias is judged that is not the built-in
	// (~/alias, ./alias).
	notAlias bool
	// hashed are the names hash -p bound to another program's path.
	hashed map[string]string
	// posix is set while the POSIX sh reading of a command is walked: no $'…', no brace
	// expansion. busybox is set too for busybox sh's reading, which decodes $'…' its own
	// way.
	posix      bool
	busybox    bool
	fetching   bool
	fetchWrote bool
	fetched    map[string]bool
	fetchedAny bool
	// visitSubsts is substs' visitor, made once.
	visitSubsts func(syntax.Node) bool
}

// reasonKey is a reason's code and segment, which the verdict holds once.
type reasonKey struct{ code, seg string }

// add records a reason, once per code and segment.
func (w *walker) add(code, seg string) {
	if code == "" {
		return
	}
	if code == codeRepoProgram && !w.cx.Unconfined {
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
	key := reasonKey{code, seg}
	if w.seen[key] {
		return
	}
	w.seen[key] = true
	if code == codeCredentialAccess {
		w.leakIn()
	}
	if code == codeWritesFiles && w.fetching {
		w.fetchWrote = true
	}
	w.v.Reasons = append(w.v.Reasons, Reason{Code: code, Segment: seg, Risk: info.risk, HardDeny: info.hardDeny, HostHardDeny: info.hostHardDeny})
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
	// Code given to a shell later (an alias, eval, sh -c) is read by dash and busybox too:
	// when it uses syntax only bash reads, its POSIX reading is judged as well.
	p, dialects := readings(src, f, !w.posix)
	if p != "" {
		// Code a shell is given (sh -c, eval) is lexed by that shell.
		w.add(codeParseError, seg)
		return
	}
	var ps posixSource
	if dialects {
		ps = posixRewrite(src, f)
	}
	saved := w.src
	w.src = src
	w.depth++
	walk := func(f *syntax.File) {
		if shared {
			w.stmts(f.Stmts, in)
		} else {
			w.child(func() { w.stmts(f.Stmts, in) })
		}
	}
	walk(f)
	if dialects {
		w.posixWalk(ps, walk)
	}
	w.depth--
	w.src = saved
}
