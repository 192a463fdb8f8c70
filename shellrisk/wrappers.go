package shellrisk

import (
	"sort"
	"strings"
)

// wrapper judges the command a wrapper runs.
func (w *walker) wrapper(p *program, s scanned, in stdin, seg string) {
	w.codeFlag(p, s, in, seg)
	if posixNoOptions[p.name] && len(s.args) > 0 && !s.args[0].dynamic && strings.HasPrefix(s.args[0].text, "-") {
		// The POSIX reading: the first word is no option but the program or the code.
		// Its unknown program is not a reason, as [[ is not (see lookup).
		saved := w.posix
		w.posix = true
		w.runWrapped(p, s.args, in, seg)
		w.posix = saved
	}
	inner := s.operands
	if p.wrapper == wrapDashDash {
		if !s.dashDash {
			return
		}
		inner = s.afterDashDash
	}
	// env NAME=VALUE cmd, sudo NAME=VALUE cmd. For eval and ssh HOST CODE the operands are
	// shell code, where 'x=1; rm -rf /' is not an assignment the wrapper takes but code.
	for p.wrapper != wrapShell && len(inner) > 0 && !inner[0].dynamic && isAssignment(inner[0].text) {
		name, _, _ := strings.Cut(inner[0].text, "=")
		if w.rules.hijacks(name) {
			w.add(codeEnvHijack, seg)
		}
		inner = inner[1:]
	}
	if p.wrapper != wrapDashDash {
		skip := min(p.skip, len(inner))
		w.skippedPaths(p, inner[:skip], seg)
		inner = inner[skip:]
	}
	if len(inner) == 0 {
		return
	}
	if len(inner) > 1 && !inner[0].dynamic && len(flagKeys(inner[0].text, p.codeFlags, true, false)) > 0 {
		// flock FILE -c CMD: the code flag after the wrapper's own operands.
		w.judgeCode(p.language, inner[1], in, seg, p.sameShell)
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

// skippedPaths judges the operands a wrapper takes before its command, when they are
// paths: flock FILE CMD creates FILE. A number there is a file descriptor (flock 9).
func (w *walker) skippedPaths(p *program, ops []arg, seg string) {
	if p.skipPaths == pathsNone {
		return
	}
	for _, a := range ops {
		if !a.dynamic && isNumber(a.text) {
			continue
		}
		w.pathEffect(a, p.skipPaths, false, seg)
	}
}

// posixNoOptions are the built-ins that take options in bash and none in dash (exec, eval)
// or busybox sh (eval), not even --: there exec -a NAME prog runs a program named -a, and
// eval -- CODE runs the code "-- CODE", a program named --.
var posixNoOptions = map[string]bool{"exec": true, "eval": true}

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
		keys := flagKeys(optionPart(p, f), p.codeFlags, true, p.wholeFlags)
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
			c := *code
			if p.callbackArgs > 0 && !c.dynamic {
				// Called with words only known at run time appended.
				// $$ is never a value the command assigned.
				c.text += strings.Repeat(` "$$"`, p.callbackArgs)
			}
			w.judgeCode(p.language, c, in, seg, p.sameShell)
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
	w.inlineCode(l, code.text, seg)
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
		case hasAny(p, s.flags, p.skipUnless, true):
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
	if hadFlag || w.moduleRun(p, s, in, seg) {
		return
	}
	if p.assignCode {
		for _, a := range ops {
			if name, v, ok := strings.Cut(a.text, "="); ok && !a.dynamic {
				w.judgeCode(p.language, arg{text: v}, stdin{}, seg, false)
				if w.notAlias {
					continue
				}
				if w.aliases == nil {
					w.aliases = map[string]string{}
				}
				w.aliases[name] = v
			} else if a.dynamic {
				w.add(codeDynamicCommand, seg)
			}
		}
		return
	}
	if !p.stdinCode {
		return
	}
	fromStdin := hasAny(p, s.flags, p.stdinFlags, true)
	if !fromStdin && len(ops) > 0 && ops[0].text != "-" && ops[0].text != "/dev/stdin" {
		if ops[0].procSubst {
			w.add(codePipeToShell, seg)
		} else {
			w.add(codeRunsScript, seg)
			w.runsFetched(ops[0], seg)
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

// findName returns the pattern of find's first -name or -iname, if any.
func findName(s scanned) arg {
	for _, v := range s.values {
		if v.flag == "-name" || v.flag == "-iname" {
			return v.val
		}
	}
	return arg{}
}

// findExec judges the command of find -exec, once per root with {} standing for it, so
// that find / -exec rm -rf {} + is judged as rm -rf /.
//
// When the expression narrows the files (-name __pycache__), {} is never the root itself
// but something below it.
//
// A -name PATTERN stands for the files {} may be: find . -name .env -exec cat {} \; reads
// ./.env, and -name '*.key' may reach a key.
func (w *walker) findExec(inner []arg, roots []arg, filtered bool, name arg, in stdin, seg string) {
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
			leaf := "{}"
			if name.text != "" && !name.dynamic {
				leaf = name.text
			}
			root.text = strings.TrimSuffix(root.text, "/") + "/" + leaf
			root.glob = name.text != "" && hasUnescapedGlob(name.text)
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

// moduleRun judges a module an interpreter runs by name (python -m pip list) as the program
// of that name with the arguments after it, and as runs_code: python looks the module up in
// the working directory first, where a pip.py of the workspace's would run instead. It
// reports whether there was such a flag.
func (w *walker) moduleRun(p *program, s scanned, in stdin, seg string) bool {
	if len(p.moduleFlags) == 0 {
		return false
	}
	for _, v := range s.values {
		if !p.moduleFlags[v.flag] {
			continue
		}
		w.add(codeRunsCode, seg)
		if v.val.dynamic {
			w.add(codeDynamicCommand, seg)
			return true
		}
		rest := v.at + 1
		if s.valueArg[rest] {
			rest++
		}
		mod := v.val
		mod.tilde = false
		w.run(append([]arg{mod}, s.args[min(rest, len(s.args)):]...), in, seg)
		return true
	}
	return false
}
