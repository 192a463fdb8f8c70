package shellrisk

import (
	"maps"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// maxCwds bounds the directories the shell may be in after cds that may not have run;
// beyond it the directory is unknown.
const maxCwds = 4

// shellState is what the shell remembers from one statement to the next, as far as the
// classifier follows it: variables with a literal value, functions, the working directory.
//
// The state only holds what is certain. Code that may not run (after && or ||, in an if,
// a case or a loop) is walked from a copy, and afterwards the state keeps only what every
// outcome agrees on; code that runs in another process (a subshell, a pipeline, sh -c)
// changes nothing here. A variable or function the classifier is not sure of is unknown,
// and an unknown value is judged by what it could be.
type shellState struct {
	vars  map[string]varValue
	funcs map[string]*funcDef
	// cwds are the directories the shell may be in, relative to the workspace or absolute.
	// The slice is never changed in place: copies of the state share it.
	cwds       []string
	cwdDynamic bool
	// noVars is set once a nameref exists (declare -n): an assignment to one name may then
	// change another, so no variable is known.
	noVars bool
	// ifsUnknown is set when IFS has a value only known at run time. Without it, IFS is
	// its entry in vars, or the default when there is none (the default is not stored,
	// so that copies of the state stay cheap).
	ifsUnknown bool
	// data are the variables whose value the command read at run time, ints the ones
	// declared integers, whose assigned values bash evaluates (see arith.go).
	data map[string]bool
	ints map[string]bool
	// varsShared and funcsShared say that vars or funcs may be shared with another copy
	// of the state: it is copied before it is changed (see ownVars). Branches and
	// subshells copy the state at every pipeline and list, and most of them change
	// nothing in it.
	varsShared, funcsShared bool
}

// varValue is a variable's literal value.
type varValue struct {
	text string
	// tilde is true when text starts with a ~ the shell expanded at the assignment (x=~).
	tilde bool
	// jobPID is true when the value is $!, the PID of a job this command started; text is
	// then unknown.
	jobPID bool
}

// funcDef is a function the command defined: its body is walked again at each call, with
// the state of that moment.
type funcDef struct {
	body *syntax.Stmt
	src  string
}

func newState() shellState {
	return shellState{cwds: []string{"."}}
}

// clone returns a copy of the state that shares its maps until either side changes them.
func (s *shellState) clone() shellState {
	s.varsShared, s.funcsShared = true, true
	// data and ints are never changed in place (withKey, withoutKey), nor cwds: copies
	// share them.
	return *s
}

// ownVars returns vars ready to be changed (see own).
func (s *shellState) ownVars() map[string]varValue { return own(&s.vars, &s.varsShared) }

// ownFuncs returns funcs ready to be changed (see own).
func (s *shellState) ownFuncs() map[string]*funcDef { return own(&s.funcs, &s.funcsShared) }

// own makes *m a map of the state's own, ready to be changed: a copy when it may be shared
// with another copy of the state, a new map when there is none.
func own[K comparable, V any](m *map[K]V, shared *bool) map[K]V {
	if *m == nil {
		*m = map[K]V{}
	} else if *shared {
		*m = maps.Clone(*m)
	}
	*shared = false
	return *m
}

// withKey returns set with k in it, a new map when k was not; withoutKey the same without
// k. The sets of a state are shared between its copies, which branches make many of, and
// change seldom.
func withKey(set map[string]bool, k string) map[string]bool {
	if set[k] {
		return set
	}
	n := make(map[string]bool, len(set)+1)
	for x := range set {
		n[x] = true
	}
	n[k] = true
	return n
}

func withoutKey(set map[string]bool, k string) map[string]bool {
	if !set[k] {
		return set
	}
	n := make(map[string]bool, len(set))
	for x := range set {
		if x != k {
			n[x] = true
		}
	}
	return n
}

// seedVars records what the context knows of the environment commands start with: the
// session's $TMPDIR.
func (w *walker) seedVars() {
	if w.cx.TMPDIR != "" {
		w.st.ownVars()["TMPDIR"] = varValue{text: w.cx.TMPDIR}
	}
}

// isolated walks fn in a copy of the state that is thrown away afterwards: a subshell, a
// pipeline's parts, a background job.
func (w *walker) isolated(fn func()) {
	saved := w.st.clone()
	fn()
	w.st = saved
}

// child walks fn as another process: it inherits the working directory but neither the
// shell's functions nor, unless exported, its variables, which are therefore unknown.
func (w *walker) child(fn func()) {
	saved := w.st
	// A shell resets IFS when it starts: ifsUnknown is false.
	w.st = shellState{cwds: saved.cwds, cwdDynamic: saved.cwdDynamic}
	if v, ok := saved.vars["TMPDIR"]; ok && w.cx.TMPDIR != "" && v == (varValue{text: w.cx.TMPDIR}) && !saved.noVars {
		// The session's TMPDIR is in the environment every child inherits; a value the
		// command gave it may not be exported, so it is unknown there.
		w.st.ownVars()["TMPDIR"] = v
	}
	fn()
	w.st = saved
}

// branches walks code that may or may not run: each fn from the same state and, when skip
// is true, the outcome where none runs. Afterwards the state holds what all outcomes agree
// on: a variable or function set differently in one of them is unknown, and the working
// directory may be any of theirs.
func (w *walker) branches(skip bool, fns ...func()) {
	base := w.st
	// Most branches are an if's, a list's or a loop's: two or three outcomes, kept on the
	// stack.
	var buf [3]shellState
	outs := buf[:0]
	if skip {
		outs = append(outs, base)
	}
	for _, fn := range fns {
		w.st = base.clone()
		fn()
		outs = append(outs, w.st)
	}
	w.st = mergeStates(outs)
}

func mergeStates(outs []shellState) shellState {
	m := outs[0].clone()
	ifs, ifsKnown := outs[0].ifs()
	for _, o := range outs[1:] {
		if v, ok := o.ifs(); !ok || v != ifs {
			ifsKnown = false
		}
		for k, v := range m.vars {
			if ov, ok := o.vars[k]; !ok || ov != v {
				delete(m.ownVars(), k)
			}
		}
		for k, f := range m.funcs {
			if o.funcs[k] != f {
				delete(m.ownFuncs(), k)
			}
		}
		for _, c := range o.cwds {
			if !slices.Contains(m.cwds, c) {
				// A new slice: m.cwds is shared with the outcomes.
				m.cwds = append(slices.Clip(m.cwds), c)
			}
		}
		m.cwdDynamic = m.cwdDynamic || o.cwdDynamic
		m.noVars = m.noVars || o.noVars
		for k := range o.data {
			m.data = withKey(m.data, k)
		}
		for k := range o.ints {
			m.ints = withKey(m.ints, k)
		}
	}
	if !ifsKnown {
		if _, ok := m.vars["IFS"]; ok {
			delete(m.ownVars(), "IFS")
		}
		m.ifsUnknown = true
	}
	if len(m.cwds) > maxCwds {
		m.cwds = m.cwds[:1:1]
		m.cwdDynamic = true
	}
	return m
}

// ifs returns IFS's value and whether it is known.
func (s shellState) ifs() (string, bool) {
	if s.noVars || s.ifsUnknown {
		return defaultIFS, false
	}
	if v, ok := s.vars["IFS"]; ok {
		return v.text, true
	}
	return defaultIFS, true
}

// setVar records a variable's value; forget makes it unknown, and forgetVars makes every
// variable unknown.
func (w *walker) setVar(name string, v varValue) {
	if w.st.noVars {
		return
	}
	w.st.ownVars()[name] = v
	w.st.data = withoutKey(w.st.data, name)
	if name == "IFS" {
		w.st.ifsUnknown = false
	}
}

func (w *walker) forget(name string) {
	w.forgetAs(name, false)
}

// forgetAs makes a variable unknown and records whether its value is data read at run
// time, in one change of the state's set of data variables.
func (w *walker) forgetAs(name string, data bool) {
	if _, ok := w.st.vars[name]; ok {
		delete(w.st.ownVars(), name)
	}
	if data {
		w.st.data = withKey(w.st.data, name)
	} else {
		w.st.data = withoutKey(w.st.data, name)
	}
	if name == "IFS" {
		w.st.ifsUnknown = true
	}
}

func (w *walker) forgetVars() {
	w.st.vars, w.st.varsShared = nil, false
	w.st.ifsUnknown = true
}

// specialBuiltins keep the variables assigned before them (x=1 export …) in POSIX mode.
var specialBuiltins = map[string]bool{
	":": true, ".": true, "source": true, "eval": true, "exec": true, "exit": true,
	"export": true, "readonly": true, "return": true, "set": true, "shift": true,
	"times": true, "trap": true, "unset": true, "break": true, "continue": true,
}

// stateEffects follows the built-ins that set or unset variables and functions without an
// assignment (read x, printf -v x, unset -f f, …): what they set becomes unknown. Names
// that change which code runs give env_hijack, and a name with a subscript holding a
// substitution (read 'a[$(cmd)]') is code, which bash runs.
func (w *walker) stateEffects(name string, args []arg, seg string) {
	switch name {
	case "read", "mapfile", "readarray", "printf", "getopts", "unset", "let", "test", "[", "wait", "hash", "export", "declare",
		"typeset", "local", "readonly":
	default:
		return
	}
	for _, a := range args {
		w.subscriptCode(a, seg)
	}
	if name == "hash" {
		w.hashPaths(args)
		// hash NAME looks NAME up in PATH, as running it would, and says so when it is not
		// there: each name is listed (it runs nothing, so it adds no reason).
		for _, a := range args {
			if !a.dynamic && !isFlag(a.text) && !strings.Contains(a.text, "/") {
				w.record(a.text, []arg{a})
			}
		}
	}
	ops, flagVals := builtinOptions(name, args)
	if name == "unset" {
		w.unset(ops, flagVals)
		return
	}
	for _, t := range stateTargets(name, ops, flagVals) {
		if t == dynamicMark || strings.Contains(t, dynamicMark) {
			// printf -v "$name": any variable may change.
			w.forgetVars()
			continue
		}
		base, _, _ := strings.Cut(t, "[")
		if w.rules.hijacks(base) {
			w.add(codeEnvHijack, seg)
		}
		w.forgetAs(base, true)
	}
}

// builtinOptions splits a state built-in's arguments into its operands and its options, each
// an option letter with its value ("" for one that takes none): read -rp PROMPT x is r, p
// with PROMPT, and the operand x.
func builtinOptions(name string, args []arg) (ops []arg, flagVals [][2]string) {
	valueOpts := map[string]string{"read": "adinNptu", "mapfile": "CcdnOsu", "readarray": "CcdnOsu", "printf": "v", "wait": "p"}[name]
	for i := 0; i < len(args); i++ {
		t := args[i].text
		if t == "--" {
			ops = append(ops, args[i+1:]...)
			break
		}
		if !isFlag(t) || args[i].dynamic || len(ops) > 0 {
			ops = append(ops, args[i])
			continue
		}
		for j := 1; j < len(t); j++ {
			c := t[j]
			if strings.IndexByte(valueOpts, c) < 0 {
				flagVals = append(flagVals, [2]string{string(c), ""})
				continue
			}
			v := t[j+1:]
			if v == "" && i+1 < len(args) {
				i++
				v = args[i].text
			}
			flagVals = append(flagVals, [2]string{string(c), v})
			break
		}
	}
	return ops, flagVals
}

// stateTargets names the variables a state built-in sets: read's operands (REPLY without
// any) and -a array, mapfile's array, printf -v, wait -p, getopts' name with OPTARG and
// OPTIND.
func stateTargets(name string, ops []arg, flagVals [][2]string) []string {
	var targets []string
	optionValue := func(letter string) {
		for _, fv := range flagVals {
			if fv[0] == letter {
				targets = append(targets, fv[1])
			}
		}
	}
	switch name {
	case "read":
		if len(ops) == 0 {
			targets = append(targets, "REPLY")
		}
		for _, o := range ops {
			targets = append(targets, o.text)
		}
		optionValue("a")
	case "mapfile", "readarray":
		if len(ops) == 0 {
			targets = append(targets, "MAPFILE")
		} else {
			targets = append(targets, ops[len(ops)-1].text)
		}
	case "printf":
		optionValue("v")
	case "wait":
		optionValue("p")
	case "getopts":
		targets = append(targets, "OPTARG", "OPTIND")
		if len(ops) > 1 {
			targets = append(targets, ops[1].text)
		}
	}
	return targets
}

// unset forgets the functions (-f) or variables (-v), or both, it names.
func (w *walker) unset(ops []arg, flagVals [][2]string) {
	funcsOnly, varsOnly := false, false
	for _, fv := range flagVals {
		funcsOnly = funcsOnly || fv[0] == "f"
		varsOnly = varsOnly || fv[0] == "v"
	}
	for _, o := range ops {
		if _, ok := w.st.funcs[o.text]; ok && !varsOnly {
			delete(w.st.ownFuncs(), o.text)
		}
		if !funcsOnly {
			w.forget(o.text)
		}
	}
}

// hookCode judges the value of a variable the shell later runs or expands as code: the
// prompts (PS4 is expanded on every command under set -x, $(…) in it runs) and
// PROMPT_COMMAND.
func (w *walker) hookCode(name, value, seg string) {
	switch name {
	case "PS1", "PS2", "PS3", "PS4":
		if strings.Contains(value, "$(") || strings.Contains(value, "`") {
			w.code(": \""+strings.ReplaceAll(value, `"`, `\"`)+"\"", seg, stdin{}, false)
		}
	case "PROMPT_COMMAND":
		w.code(value, seg, stdin{}, false)
	}
}

// hashPaths follows hash -p PATH NAME: from then on NAME runs PATH (hash -p /bin/rm ls
// makes ls a deletion).
func (w *walker) hashPaths(args []arg) {
	for i := 0; i+2 < len(args); i++ {
		if args[i].text == "-p" && !args[i+1].dynamic && !args[i+2].dynamic {
			if w.hashed == nil {
				w.hashed = map[string]string{}
			}
			w.hashed[args[i+2].text] = args[i+1].text
			return
		}
	}
}

// subscriptCode judges the subscript of a variable name given as text to a built-in that
// evaluates it (read, printf -v, unset, declare, test -v, let): bash expands a $(…) in
// it, so 'a[$(rm -rf ~)]' runs rm.
func (w *walker) subscriptCode(a arg, seg string) {
	i := strings.IndexByte(a.text, '[')
	if i < 0 || a.dynamic {
		return
	}
	if rest := a.text[i:]; strings.Contains(rest, "$(") || strings.Contains(rest, "`") || strings.Contains(rest, "${") {
		w.code(": "+rest, seg, stdin{}, true)
	}
}
