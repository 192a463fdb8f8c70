package shellrisk

import (
	"path"
	"strings"
)

// operandPaths applies the rule's path mode to the operands.
func (w *walker) operandPaths(p *program, s scanned, ops []arg, seg string) {
	mode := p.paths
	for _, f := range s.flags {
		for _, k := range flagKeys(optionPart(p, f), p.pathFlags, true, p.wholeFlags) {
			mode = p.pathFlags[k]
		}
	}
	recursive := hasAny(p, s.flags, p.recursive, true) && !w.filtered(p, s)
	if p.expression && len(ops) == 0 {
		ops = []arg{{text: "."}}
	}
	if p.skip > 0 && !hasAny(p, s.flags, p.skipUnless, true) {
		ops = ops[min(p.skip, len(ops)):]
	}
	if len(ops) == 0 && p.defaultOperand != "" && recursive {
		ops = []arg{{text: p.defaultOperand}}
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
		case pathsDest, pathsIO, pathsDestDelete, pathsLink, pathsFirst:
			continue
		default:
			w.pathEffect(a, mode, recursive, seg)
		}
	}
	w.placedOperands(ops, mode, seg)
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

// placedOperands judges the operands of the modes that single them out by place: copies and
// links (every operand but the last read or linked, the last written, or emptied with
// rsync --delete), the first operand written, or the second written after the first read.
func (w *walker) placedOperands(ops []arg, mode, seg string) {
	if len(ops) == 0 {
		return
	}
	last := ops[len(ops)-1]
	switch mode {
	case pathsDest, pathsDestDelete, pathsLink:
		copiesSecret := false
		for _, a := range ops[:len(ops)-1] {
			if mode == pathsLink {
				w.linkTarget(a, linkDir(last, len(ops) > 2), seg)
			} else {
				w.pathEffect(a, pathsRead, false, seg)
				copiesSecret = copiesSecret || !a.dynamic && w.leaks(w.classifyPath(a))
			}
		}
		if copiesSecret && !last.dynamic {
			// cp .env x: sending x later sends the secret.
			if w.tainted == nil {
				w.tainted = map[string]bool{}
			}
			w.tainted[w.classifyPath(last).clean] = true
		}
		if mode == pathsDestDelete {
			// rsync --delete empty/ dir empties dir.
			w.pathEffect(last, pathsDelete, true, seg)
		} else {
			w.pathEffect(last, pathsWrite, false, seg)
		}
	case pathsFirst:
		w.pathEffect(ops[0], pathsWrite, false, seg)
	case pathsIO:
		// uniq IN OUT, xxd IN OUT: the second operand is written.
		w.pathEffect(ops[0], pathsRead, false, seg)
		if len(ops) > 1 {
			w.pathEffect(ops[1], pathsWrite, false, seg)
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
			continue
		}
		// --dump=FILE abbreviates --dump-variables=FILE, a flag whose value is only attached.
		for _, k := range flagKeys(v.flag, p.valuePaths, true, p.wholeFlags) {
			if strings.HasPrefix(k, "--") {
				w.pathEffect(v.val, p.valuePaths[k], false, seg)
			}
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
	if !hasAny(p, s.flags, p.filters, false) {
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

// linkTarget judges the target of a symbolic link: a link that leads outside the
// workspace — to /, the home directory, a system path, a secret, or up with .. — lets a
// later workspace write or delete reach what it leads to. A relative target is resolved
// from the directory the link is made in, as the kernel resolves it: ln -s ../../x sub/l
// leads to ../x.
func (w *walker) linkTarget(a arg, dir string, seg string) {
	if !a.dynamic && !strings.HasPrefix(a.text, "/") && !(a.tilde && strings.HasPrefix(a.text, "~")) && dir != "." {
		a.text = dir + "/" + a.text
	}
	info := w.classifyPath(a)
	switch {
	case info.secret, info.class == pathRoot, info.class == pathSystemDir,
		info.class == pathSystem, info.class == pathDevice, info.class == pathOutside:
		w.add(codeSymlinkOutside, seg)
	case info.class == pathDynamic:
		w.add(codeDynamicPath, seg)
	}
}

// linkDir returns the directory a link is made in, from ln's last operand: the operand
// itself when it is a directory (several targets, or a trailing /), else its parent.
func linkDir(last arg, many bool) string {
	t := last.text
	if last.dynamic {
		return "."
	}
	if many || strings.HasSuffix(t, "/") {
		return strings.TrimSuffix(t, "/")
	}
	return path.Dir(t)
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
	for c := range strings.SplitSeq(t, "/") {
		for _, name := range w.rules.paths.AirlockState {
			if c == name {
				return true
			}
		}
		// The configuration and the ledger in use, whatever they are called.
		if w.cx.protectedNames[c] {
			return true
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
	if w.leaks(info) || w.treeMayHoldSecrets(info) && !strings.HasSuffix(file, "-") {
		w.add(codeExfiltration, seg)
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
	// A new slice: copies of the state share the old one.
	cwds := make([]string, len(w.st.cwds))
	for i, c := range w.st.cwds {
		cwds[i] = joinPath(c, t)
	}
	w.st.cwds = cwds
}

// tempFile judges what mktemp creates: a file (or directory) named from the template, in
// the directory -p/--tmpdir names, in $TMPDIR when there is no template or a -t or bare
// --tmpdir asks for it, and else where the template itself says. A $TMPDIR the command does
// not know is judged as /tmp, where mktemp creates without one: shared with every other
// project on the machine, outside the workspace.
func (w *walker) tempFile(p *program, s scanned, seg string) {
	template := arg{text: "tmp.XXXXXXXXXX"}
	given := len(s.operands) > 0
	if given {
		template = s.operands[0]
	}
	dir, inTemp := arg{}, !given
	for _, f := range s.flags {
		if name, _, _ := strings.Cut(f, "="); len(flagKeys(name, p.tempDirFlags, true, false)) > 0 {
			inTemp = true
		}
	}
	for _, v := range s.values {
		if len(flagKeys(v.flag, p.tempDirFlags, true, false)) > 0 && v.val.text != "" {
			dir = v.val
		}
	}
	if dir.text == "" && inTemp {
		dir = arg{text: "/tmp"}
		if v, ok := w.st.vars["TMPDIR"]; ok && !w.st.noVars {
			dir = arg{text: v.text, tilde: v.tilde, dynamic: strings.Contains(v.text, dynamicMark) || v.jobPID}
		}
	}
	target := template
	if dir.text != "" {
		if template.dynamic {
			dir.dynamic = true
		}
		dir.text = strings.TrimSuffix(dir.text, "/") + "/" + path.Base(template.text)
		target = dir
	}
	w.pathEffect(target, pathsWrite, false, seg)
}
