package shellrisk

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// call judges one simple command.
func (w *walker) call(c *syntax.CallExpr, in stdin) {
	seg := w.text(c)
	saved := w.leak
	w.leak = false
	for _, word := range c.Args {
		w.substs(word)
	}
	// curl -d "$(cat .env)" URL: a substitution that read a secret puts it in the words.
	w.argLeak, w.leak = w.leak, saved || w.leak
	defer func() { w.argLeak = false }()
	if len(c.Args) == 0 {
		for _, a := range c.Assigns {
			w.assign(a, seg)
		}
		return
	}
	// The words are expanded before the assignments in front of them take effect, and
	// those only hold for the command (x=foo true leaves x as it was).
	args := w.expandWords(c.Args)
	if len(args) == 0 {
		// {,} and an empty unquoted $x expand to no words: nothing runs, the assignments hold.
		for _, a := range c.Assigns {
			w.assign(a, seg)
		}
		return
	}
	type prior struct {
		v          varValue
		ok         bool
		ifsDefault bool // IFS had its default value, which vars does not hold
	}
	var priors map[string]prior
	if len(c.Assigns) > 0 {
		priors = map[string]prior{}
		for _, a := range c.Assigns {
			if a.Name != nil {
				v, ok := w.st.vars[a.Name.Value]
				priors[a.Name.Value] = prior{v, ok, a.Name.Value == "IFS" && !ok && w.ifsDefault()}
			}
			w.assign(a, seg)
		}
	}
	w.callArgs(args, in, seg)
	if len(priors) > 0 {
		name := args[0].text
		_, isFunc := w.st.funcs[name]
		for k, p := range priors {
			switch {
			case p.ifsDefault && !specialBuiltins[name] && !isFunc:
				if _, ok := w.st.vars[k]; ok {
					delete(w.st.ownVars(), k)
				}
				w.st.ifsUnknown = false
			case p.ok && !specialBuiltins[name] && !isFunc:
				w.setVar(k, p.v)
			default:
				// A special built-in keeps them in POSIX mode; a function sees them.
				w.forget(k)
			}
		}
	}
}

// callArgs runs an expanded simple command: a function the command defined, or a program.
func (w *walker) callArgs(args []arg, in stdin, seg string) {
	name := args[0]
	if p, ok := w.hashed[name.text]; ok && !name.dynamic {
		// bash runs PATH (or, when it is not executable, looks NAME up as usual); dash and
		// busybox have no hash -p and run NAME: both readings are judged.
		w.run(append([]arg{{text: p}}, args[1:]...), in, seg)
	}
	if body, ok := w.aliases[name.text]; ok && !name.dynamic && !name.quoted && !w.expanding[name.text] && w.depth < maxDepth {
		// Each reading from the same state: a function or variable the alias's text
		// defines does not exist where bash runs the word itself.
		w.branches(false,
			func() { w.aliasReading(name.text, body, args[1:], in, seg) },
			func() { w.callWord(args, in, seg) })
		return
	}
	w.callWord(args, in, seg)
}

// callWord runs an expanded simple command by its first word: a function the command
// defined, or a program.
func (w *walker) callWord(args []arg, in stdin, seg string) {
	name := args[0]
	if def := w.st.funcs[name.text]; def != nil && !name.dynamic && !strings.Contains(name.text, "/") {
		w.calls++
		if w.calls > maxCalls {
			w.add(codeTooComplex, w.src)
			return
		}
		// The copy shares vars with the state until the call changes them.
		before := w.st.clone().vars
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
		w.record("", args)
		w.add(codeDynamicCommand, seg)
		w.metadataScan(args, seg)
		return
	}
	w.stateEffects(path.Base(name.text), args[1:], seg)
	p, ok := w.lookup(name, seg)
	if !ok {
		w.record(path.Base(path.Clean(name.text)), args)
		w.metadataScan(args, seg)
		return
	}
	w.record(p.name, args)
	// Only the built-in alias, called by its bare name, defines an alias: ~/alias ls=… is
	// a script.
	saved := w.notAlias
	w.notAlias = strings.Contains(name.text, "/") || name.tilde && strings.HasPrefix(name.text, "~")
	w.program(p, args[1:], in, seg)
	w.notAlias = saved
}

// record adds a judged argument vector to the verdict's commands.
func (w *walker) record(name string, args []arg) {
	c := Command{Name: name, Argv: make([]string, len(args))}
	for i, a := range args {
		c.Argv[i] = a.text
		home := strings.Contains(a.text, homeMark)
		if home {
			c.Argv[i] = strings.ReplaceAll(a.text, "/home/"+homeMark, "~")
		}
		if a.dynamic || a.glob || a.procSubst || a.tilde || home {
			c.Unknown = append(c.Unknown, i)
		}
	}
	c.Dynamic = len(c.Unknown) > 0
	w.v.Commands = append(w.v.Commands, c)
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
			w.runsFetched(name, seg)
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
	if !w.posix {
		// In the POSIX reading of bash syntax an unknown name is what dash makes of [[ or
		// (( 1 + 2 )): a program that is not there. The bash reading judged the name.
		w.add(codeUnknownProgram, seg)
	}
	return nil, false
}

func (w *walker) find(name string) (*program, bool) {
	for i := range nameForms {
		if cand, ok := nameForm(name, i); ok {
			if p, ok := w.rules.lookup(cand); ok {
				return p, true
			}
		}
	}
	return nil, false
}

// runsFetched judges running a file: one this command downloaded is run as code from the
// network, as curl … | sh is.
func (w *walker) runsFetched(a arg, seg string) {
	if w.fetchedAny || (!a.dynamic && w.fetched[w.classifyPath(a).clean]) {
		w.add(codeDownloadAndRun, seg)
	}
}

// metadataScan flags a cloud metadata address anywhere in the arguments of a program that
// can reach the network.
func (w *walker) metadataScan(args []arg, seg string) {
	w.hostScan(args, seg)
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

// program judges a known program with its arguments.
func (w *walker) program(p *program, args []arg, in stdin, seg string) {
	if len(args) == 1 && w.rules.infoFlags[args[0].text] {
		return
	}
	if len(p.workdirFlags) > 0 {
		// git -C DIR, make -C DIR: the call works in DIR, as after cd DIR.
		var dirs []arg
		for _, v := range w.scan(p, args, true).values {
			if p.workdirFlags[v.flag] {
				dirs = append(dirs, v.val)
			}
		}
		if len(dirs) > 0 {
			w.isolated(func() {
				for _, d := range dirs {
					w.changeDir([]arg{d})
				}
				w.programHere(p, args, in, seg, true)
			})
			return
		}
	}
	w.programHere(p, args, in, seg, false)
}

// programHere judges a known program in the directory the shell is in. moved is true when
// a workdir flag moved it there.
func (w *walker) programHere(p *program, args []arg, in stdin, seg string, moved bool) {
	p, args, reason := w.descend(p, args, seg)
	if len(args) == 1 && w.rules.infoFlags[args[0].text] {
		return
	}
	args = oldStyle(p, args)
	// A wrapper's options end at its first operand, except when its command follows "--".
	s := w.scan(p, args, p.wrapper != "" && p.wrapper != wrapDashDash)
	if w.queryOnly(p, s, reason) {
		return
	}
	w.add(reason, seg)
	if p.repoPrograms {
		w.add(codeRepoProgram, seg)
	}
	w.workdirEffect(reason, moved, seg)
	saved, before := w.fetching, len(w.fetched)
	w.fetching, w.fetchWrote = w.rules.reasons[reason].risk == RiskNetwork, false
	defer func() {
		if w.fetching && w.fetchWrote && len(w.fetched) == before {
			// curl -O URL: saved under a name only the server knows.
			w.fetchedAny = true
		}
		w.fetching = saved
	}()
	w.flagReasons(p, s, seg)
	w.valueReasons(p, s, seg)
	w.operandReasons(p, args, s, seg)
	if p.codeValues {
		w.configCode(p, s, seg)
	}
	w.airlockScan(args, seg)
	if risk := w.rules.reasons[reason].risk; risk >= RiskNetwork || p.language != "" || p.wrapper != "" {
		w.metadataScan(args, seg)
	}
	w.valuePaths(p, s, seg)
	w.archiveFile(p, s, seg)
	w.unknownOptions(p, s, seg)
	if in.secret {
		// What reads a secret from its input passes it on.
		w.leakIn()
	}
	if p.dumpsEnv && len(s.operands) == 0 || p.archives && w.readsTree(p, s) {
		w.leakIn()
		if p.archives {
			// tar czf x.tgz . writes the tree into x.tgz: sending x.tgz later sends the tree.
			w.taint(s)
		}
	}
	if w.rules.reasons[reason].risk == RiskNetwork || p.sends || p.pushes {
		w.sendEffects(p, s, in, seg)
	}
	if p.definesRemote && len(s.operands) >= 2 && !s.operands[0].dynamic {
		if w.remotes == nil {
			w.remotes = map[string]bool{}
		}
		w.remotes[s.operands[0].text] = true
	}
	switch {
	case p.wrapper != "":
		w.wrapper(p, s, in, seg)
	case p.language != "":
		w.codeRunner(p, s, in, seg)
	case p.makesTemp:
		w.tempFile(p, s, seg)
	default:
		w.operandPaths(p, s, s.operands, seg)
	}
	for _, inner := range s.execs {
		w.findExec(inner, s.operands, w.filtered(p, s), findName(s), in, seg)
	}
	if p.changesDir {
		w.changeDir(s.operands)
	}
	if p.signals != "" {
		w.signalTargets(p, args, seg)
	}
}

// workdirEffect judges the directory a program that writes or runs code works in, when
// that is not the workspace: `cd ~/other && git reset --hard`, `git -C /srv/app clean -fdx`
// and `make -C ..` act outside it although they name no path. A directory only known at
// run time is judged so only when a flag named it: after `cd "$dir"` the classifier
// cannot tell and says nothing more than the program's own reason.
func (w *walker) workdirEffect(reason string, moved bool, seg string) {
	switch w.rules.reasons[reason].risk {
	case RiskWrite, RiskExec, RiskIrreversible:
	default:
		return
	}
	if !moved && len(w.st.cwds) == 1 && w.st.cwds[0] == "." && !w.st.cwdDynamic {
		return
	}
	info := w.classifyPath(arg{text: "."})
	switch info.class {
	case pathWorkspace, pathWorkspaceRoot, pathScratch, pathHarmless:
	case pathDynamic:
		if moved {
			w.add(codeDynamicPath, seg)
		}
	case pathOutside:
		if !matchAny(info.clean, w.rules.paths.Scratch) {
			w.add(codeWriteOutside, seg)
		}
	default:
		w.add(codeSystemFileWrite, seg)
	}
}

// unknownOptions judges arguments whose value is only known at run time ("$x", $(…), a
// glob such as * that may match a file named --pre=./x) given to a program with options
// that run code or write: each may be such an option, so the call is judged as the worst
// of them. A value after "--", or given to an option, is not an option.
func (w *walker) unknownOptions(p *program, s scanned, seg string) {
	if p.worstFlag == "" || p.wrapper != "" {
		return
	}
	for i, a := range s.args {
		if a.text == "--" && !a.dynamic {
			return
		}
		if s.valueArg[i] || a.procSubst {
			continue
		}
		if a.dynamic && strings.HasPrefix(a.text, dynamicMark) {
			w.add(p.worstFlag, seg)
			return
		}
		if a.glob && a.text != "" && strings.IndexByte("*?[", a.text[0]) >= 0 {
			w.globOptions(p, a.text, seg)
		}
	}
}

// globOptions judges a glob that may expand to a file named like one of the program's
// options: tar cf x.tar * with a file called --checkpoint-action=exec=sh x.sh.
func (w *walker) globOptions(p *program, glob, seg string) {
	tail := glob[strings.LastIndexAny(glob, "*?]")+1:]
	worst := ""
	for flag, code := range p.flags {
		if !strings.HasPrefix(flag, "-") || code == "no_preserve_root" {
			continue
		}
		m1, _ := path.Match(glob, flag)
		m2 := false
		if strings.HasPrefix(flag, "--") {
			m2, _ = path.Match(glob, flag+"=x"+tail)
		}
		if (m1 || m2) && (worst == "" || w.rules.reasons[code].risk > w.rules.reasons[worst].risk) {
			worst = code
		}
	}
	w.add(worst, seg)
}

// configCode judges a configuration value that is a command (git config core.pager CMD,
// git config alias.x '!CMD'): the program will run it later, so it is judged now.
func (w *walker) configCode(p *program, s scanned, seg string) {
	if len(s.operands) < 2 || s.operands[0].dynamic {
		return
	}
	key := strings.ToLower(s.operands[0].text)
	for _, o := range p.operands {
		if o[1] != "runs_code" || !globMatch(o[0], key) {
			continue
		}
		v := s.operands[1]
		if v.dynamic {
			w.add(codeDynamicCommand, seg)
			return
		}
		code := v.text
		if strings.HasPrefix(key, "alias.") {
			if !strings.HasPrefix(code, "!") {
				return
			}
			code = code[1:]
		}
		w.code(code, seg, stdin{}, false)
		return
	}
}

// readsTree reports whether an archiver's operands include a tree that may hold secrets
// (tar c ., zip -r - ..).
func (w *walker) readsTree(p *program, s scanned) bool {
	for _, a := range s.operands {
		if w.treeMayHoldSecrets(w.classifyPath(a)) {
			return true
		}
	}
	return false
}

// queryOnly reports whether a call only prints information: a query flag (crontab -l,
// iptables -L) and nothing that does more. One harmless flag does not excuse the others:
// crontab -r -l still removes the crontab, iptables -F -L still flushes the rules and
// ruby -v -e CODE still runs CODE.
//
// For a program that is dangerous unless it only queries (hdparm, iptables, crontab), every
// flag must be a query flag or take a value: an option the rules do not know may be the
// one that writes (hdparm -I --fwdownload).
func (w *walker) queryOnly(p *program, s scanned, reason string) bool {
	if !hasAny(p, s.flags, p.queryFlags, false) || hasAny(p, s.flags, p.codeFlags, true) {
		return false
	}
	if w.rules.reasons[reason].risk == RiskDangerous {
		for _, f := range s.flags {
			name, _, _ := strings.Cut(f, "=")
			if len(flagKeys(optionPart(p, f), p.queryFlags, false, p.wholeFlags)) == 0 && !p.valueFlags[name] {
				return false
			}
		}
	}
	for _, f := range s.flags {
		for _, k := range flagKeys(optionPart(p, f), p.flags, true, p.wholeFlags) {
			if w.rules.reasons[p.flags[k]].risk > RiskSafe {
				return false
			}
		}
	}
	return true
}

// signalTargets judges the processes a kill signals. Only a process this command started
// in the background ($!, %1) is its own; any other PID — a number, -1 (every process), 0
// (the group), $PPID, a value only known at run time — belongs to someone else.
// pkill and killall pick processes by name, which are never only this command's.
func (w *walker) signalTargets(p *program, args []arg, seg string) {
	if p.signals == signalsNames {
		w.add(codeSignalsOther, seg)
		return
	}
	i := 0
	for i < len(args) {
		a := args[i]
		t := a.text
		if t == "--" && !a.dynamic {
			i++
			break
		}
		if a.dynamic || !isFlag(t) || i > 0 && isSignalTarget(t) {
			break
		}
		if p.valueFlags[t] {
			i++
		}
		i++
	}
	for _, a := range args[i:] {
		if a.jobPID || (!a.dynamic && strings.HasPrefix(a.text, "%")) {
			continue
		}
		w.add(codeSignalsOther, seg)
		return
	}
}

// isSignalTarget reports whether a kill argument after the signal names a process group
// (-PGID) or every process (-1) rather than another option.
func isSignalTarget(t string) bool {
	return len(t) > 1 && t[0] == '-' && isNumber(t[1:])
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
