package approval

import (
	"path"
	"strings"
)

// pathClass is where a path operand points, from the workspace's point of view. The
// classifier never touches the file system: it judges the text.
type pathClass int

const (
	pathWorkspace     pathClass = iota // relative, inside the workspace
	pathWorkspaceRoot                  // the workspace itself (".")
	pathHarmless                       // /dev/null and friends
	pathScratch                        // /tmp: outside, but meant for scratch files
	pathOutside                        // absolute, ~, or a .. escape
	pathSystem                         // under a system directory
	pathSystemDir                      // a system directory itself
	pathRoot                           // /, ~, /home: deleting it loses everything
	pathDevice                         // a block or memory device
	pathSocket                         // /dev/tcp/HOST/PORT
	pathDynamic                        // only known at run time
)

// pathInfo is the judgement of one path operand.
type pathInfo struct {
	class  pathClass
	secret bool
	clean  string
}

// classifyPath judges a path operand. Relative paths are resolved against the directory a
// preceding cd moved to, so `cd / && rm -rf *` is judged at /.
func (w *walker) classifyPath(a arg) pathInfo {
	if a.dynamic {
		return pathInfo{class: pathDynamic}
	}
	text := a.text
	if text == "" {
		return pathInfo{class: pathWorkspace, clean: "."}
	}
	if strings.HasPrefix(text, "~") && !a.tilde {
		text = "./" + text
	}
	if a.glob {
		// A pattern can match anything in the directory it starts in.
		if i := strings.IndexAny(text, "*?["); i >= 0 {
			text = text[:i]
			if j := strings.LastIndexByte(text, '/'); j >= 0 {
				text = text[:j+1]
			} else {
				text = "."
			}
		}
	}
	abs := strings.HasPrefix(text, "/") || strings.HasPrefix(text, "~")
	if !abs {
		if w.cwdDynamic {
			return pathInfo{class: pathDynamic}
		}
		text = path.Join(w.cwd, text)
		// Only the directory cd moved to can make a relative path absolute: a quoted "~"
		// stays a file named ~.
		abs = strings.HasPrefix(w.cwd, "/") || strings.HasPrefix(w.cwd, "~")
	}
	if !abs {
		c := path.Clean(text)
		switch {
		case c == "..", strings.HasPrefix(c, "../"):
			return pathInfo{class: pathOutside, clean: c}
		case c == ".":
			return pathInfo{class: pathWorkspaceRoot, clean: c}
		}
		return pathInfo{class: pathWorkspace, clean: c}
	}
	c := cleanAbs(text)
	info := pathInfo{class: pathOutside, clean: c}
	p := &w.rules.paths
	info.secret = underAny(c, p.Secrets)
	switch {
	case matchAny(c, p.Harmless):
		info.class = pathHarmless
	case matchAny(c, p.Sockets):
		info.class = pathSocket
	case matchAny(c, p.Devices):
		info.class = pathDevice
	case matchAny(c, p.Roots):
		info.class = pathRoot
	case matchAny(c, p.Scratch):
		// The scratch directory itself is shared with everything else on the machine; only
		// what is below it is scratch.
		info.class = pathOutside
	case underAny(c, p.Scratch):
		info.class = pathScratch
	case matchAny(c, p.System):
		info.class = pathSystemDir
	case underAny(c, p.System):
		info.class = pathSystem
	}
	return info
}

// cleanAbs cleans an absolute or home-relative path, keeping the ~ form so that rules can
// name ~/.ssh. ~user is taken to be /home/user.
func cleanAbs(p string) string {
	if !strings.HasPrefix(p, "~") {
		return path.Clean(p)
	}
	rest := p[1:]
	if rest != "" && rest[0] != '/' {
		user, tail, _ := strings.Cut(rest, "/")
		return path.Clean("/home/" + user + "/" + tail)
	}
	c := path.Clean("/" + rest)
	if c == "/" {
		return "~"
	}
	return "~" + c
}

// matchAny reports whether p is one of the entries, each a path or a glob.
func matchAny(p string, entries []string) bool {
	for _, e := range entries {
		if e == p {
			return true
		}
		if ok, _ := path.Match(e, p); ok {
			return true
		}
	}
	return false
}

// underAny reports whether p is one of the entries or below one.
func underAny(p string, entries []string) bool {
	for _, e := range entries {
		if e == "/" || e == "~" {
			// Everything is below these; they only match themselves.
			if p == e {
				return true
			}
			continue
		}
		if e == p || strings.HasPrefix(p, strings.TrimSuffix(e, "/")+"/") {
			return true
		}
		if ok, _ := path.Match(e, p); ok {
			return true
		}
		// A glob entry matches below itself too: /proc/*/environ.
		for d := path.Dir(p); d != "/" && d != "." && d != "~"; d = path.Dir(d) {
			if ok, _ := path.Match(e, d); ok {
				return true
			}
		}
	}
	return false
}

// pathEffect gives the reasons for what a program does to one path operand.
func (w *walker) pathEffect(a arg, mode string, recursive bool, seg string) {
	if a.procSubst {
		return
	}
	info := w.classifyPath(a)
	switch mode {
	case pathsRead:
		if info.secret {
			w.add(codeCredentialAccess, seg)
		}
	case pathsWrite:
		w.writeEffect(info, recursive, seg)
	case pathsDelete, pathsMove:
		if mode == pathsMove {
			recursive = true
		}
		w.deleteEffect(info, recursive, seg)
	}
}

func (w *walker) writeEffect(info pathInfo, recursive bool, seg string) {
	switch info.class {
	case pathDynamic:
		w.add(codeDynamicPath, seg)
	case pathDevice:
		w.add(codeDeviceWrite, seg)
	case pathSocket:
		w.add(codeRawSocket, seg)
	case pathRoot, pathSystemDir:
		if recursive {
			w.add(codeRecursiveModifySystem, seg)
		} else {
			w.add(codeSystemFileWrite, seg)
		}
	case pathSystem:
		w.add(codeSystemFileWrite, seg)
	case pathOutside:
		w.add(codeWriteOutside, seg)
	}
	if info.secret && info.class != pathDynamic {
		w.add(codeSystemFileWrite, seg)
	}
}

func (w *walker) deleteEffect(info pathInfo, recursive bool, seg string) {
	switch info.class {
	case pathDynamic:
		w.add(codeDynamicPath, seg)
	case pathDevice:
		w.add(codeDeviceWrite, seg)
	case pathRoot:
		if recursive {
			w.add(codeRecursiveDeleteRoot, seg)
		} else {
			w.add(codeDeleteOutside, seg)
		}
	case pathSystemDir:
		if recursive {
			w.add(codeRecursiveDeleteSystem, seg)
		} else {
			w.add(codeDeleteOutside, seg)
		}
	case pathSystem, pathOutside, pathSocket:
		w.add(codeDeleteOutside, seg)
	case pathHarmless:
		w.add(codeSystemFileWrite, seg)
	case pathWorkspaceRoot:
		if recursive {
			w.add(codeRecursiveDeleteWorkspace, seg)
		}
	}
	if info.secret && info.class != pathDynamic {
		w.add(codeDeleteOutside, seg)
	}
}
