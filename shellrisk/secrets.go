package shellrisk

import (
	"path"
	"strings"
)

// Secrets: which paths hold credentials, by the rules' secret entries and names and the
// context's deny_names, including patterns that may name one.

// envFile reports whether a path names a file of secrets wherever it is: .env and .env.*
// files (not .env.example and the like, which are meant to be shared). Reading one is
// credential access; writing one in the workspace is an ordinary write.
//
// Names match without regard to case (.ENV is .env on a case-insensitive file system, and
// the file tools' deny_names ignore case too). A name with a slash (.aws/credentials)
// matches consecutive components anywhere in the path; the configured deny_names of the
// [Context] apply as the file tools apply them, to any component.
func (w *walker) envFile(c string) bool {
	lc := strings.ToLower(c)
	base := path.Base(lc)
	if !w.secretName(lc, base) {
		return false
	}
	for _, not := range w.rules.paths.NotSecretNames {
		if ok, _ := path.Match(not, base); ok {
			return false
		}
	}
	return true
}

func (w *walker) secretName(lc, base string) bool {
	rs := w.rules
	if rs.secretExact[base] {
		return true
	}
	for _, s := range rs.secretSuffixes {
		if strings.HasSuffix(base, s) {
			return true
		}
	}
	for _, p := range rs.secretPrefixes {
		if strings.HasPrefix(base, p) {
			return true
		}
	}
	for _, pat := range rs.secretGlobs {
		if ok, _ := path.Match(pat, base); ok {
			return true
		}
	}
	if strings.IndexByte(lc, '/') >= 0 {
		cs := strings.Split(lc, "/")
		for _, parts := range rs.secretPaths {
			if partsMatch(parts, cs) {
				return true
			}
		}
	}
	for _, pat := range w.cx.DenyNames {
		if componentsMatch(pat, lc) {
			return true
		}
	}
	return false
}

// componentsMatch reports whether pattern (one or more slash-separated globs, lower case)
// matches consecutive components of the lower-cased path c, as the file tools' deny_names
// match.
func componentsMatch(pattern, c string) bool {
	return partsMatch(strings.Split(strings.Trim(strings.ToLower(pattern), "/"), "/"), strings.Split(c, "/"))
}

func partsMatch(parts, cs []string) bool {
	for i := 0; i+len(parts) <= len(cs); i++ {
		all := true
		for j, part := range parts {
			if ok, err := path.Match(part, cs[i+j]); err != nil || !ok {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// maySecret reports whether a path with unknown parts (a glob, a $var shown as *) may
// name a secret.
func (w *walker) maySecret(pattern string) bool {
	if strings.HasPrefix(pattern, "/") || strings.HasPrefix(pattern, "~") || strings.HasPrefix(pattern, "*") {
		return w.maySecretAt(".", pattern)
	}
	if w.st.cwdDynamic {
		return w.maySecretAt(".", "*/"+pattern)
	}
	for _, cwd := range w.st.cwds {
		if w.maySecretAt(cwd, pattern) {
			return true
		}
	}
	return false
}

func (w *walker) maySecretAt(cwd, pattern string) bool {
	if !strings.HasPrefix(pattern, "/") && !strings.HasPrefix(pattern, "~") && !strings.HasPrefix(pattern, "*") {
		if !strings.HasPrefix(cwd, "/") && !strings.HasPrefix(cwd, "~") {
			// In the workspace only a secret file's name can match.
			return w.globSecretName(pattern)
		}
		pattern = cwd + "/" + pattern
	}
	pc := patternComps(pattern)
	anchored := !strings.HasPrefix(pattern, "*")
	for _, ec := range w.rules.secretComps {
		if compsMayMatch(pc, ec, anchored) {
			return true
		}
	}
	return w.globSecretName(pattern)
}

// globSecretName reports whether a pattern's last part may be a secret file's name.
func (w *walker) globSecretName(pattern string) bool {
	base := path.Base(pattern)
	if base == "*" {
		// Any file at all: too broad to call a read of secrets.
		return false
	}
	head, tail := globEnds(base)
	for _, pat := range w.rules.paths.SecretNames {
		name := strings.TrimSuffix(pat, "*")
		if !strings.HasPrefix(name, head) || !strings.HasSuffix(name, tail) {
			// What the pattern matches starts with head and ends with tail.
			continue
		}
		if ok, _ := path.Match(base, name); ok {
			return true
		}
	}
	return false
}

// globEnds returns the literal text a path.Match pattern's matches start with (before its
// first meta character) and end with (after its last *, when no meta character and no ]
// follows it: a * in a class, [*]x, is followed by its ]): a cheap test that spares
// path.Match most names.
func globEnds(pattern string) (head, tail string) {
	head = pattern
	if i := metaIndex(pattern); i >= 0 {
		head = pattern[:i]
	}
	if i := strings.LastIndexByte(pattern, '*'); i >= 0 && !strings.ContainsAny(pattern[i+1:], `?[]\`) {
		tail = pattern[i+1:]
	}
	return head, tail
}

// homeMark stands for the user's name in a home directory.
const homeMark = "\x02"

// patternComps splits a path pattern into components, from / (a ~ is /home/USER).
func patternComps(p string) []string {
	if rest, ok := strings.CutPrefix(p, "~"); ok {
		if rest != "" && rest[0] != '/' {
			// ~bob/x
			_, rest, _ = strings.Cut(rest, "/")
			rest = "/" + rest
		}
		p = "/home/" + homeMark + rest
	}
	if rest, ok := procAlias(path.Clean(p)); ok {
		p = rest
	}
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// secretComps gives the components of a secrets entry, one list per place a ~ may be.
func secretComps(e string) [][]string {
	if rest, ok := strings.CutPrefix(e, "~"); ok {
		return [][]string{patternComps("/home/" + homeMark + rest), patternComps("/Users/" + homeMark + rest), patternComps("/root" + rest)}
	}
	return [][]string{patternComps(e)}
}

// compsMayMatch reports whether a path pattern may name the secret entry or something
// below it. An unanchored pattern (one that starts with an unknown part) may match the
// entry at any depth, as long as a known part of it matches.
func compsMayMatch(pc, ec []string, anchored bool) bool {
	try := func(off int) bool {
		known := anchored
		for i, e := range ec {
			if off+i >= len(pc) {
				// The pattern stops above the entry: a directory holding it, read whole only
				// by a recursive reader; not judged a secret.
				return false
			}
			p := pc[off+i]
			switch {
			case p == "*" || p == "**":
			case compMatch(p, e):
				known = known || !strings.ContainsAny(p, "*?[")
			default:
				return false
			}
		}
		return known
	}
	if anchored {
		return try(0)
	}
	for off := 0; off < len(pc); off++ {
		if try(off) {
			return true
		}
	}
	return false
}

func compMatch(p, e string) bool {
	if p == e {
		return true
	}
	if ok, _ := path.Match(p, e); ok {
		return true
	}
	ok, _ := path.Match(e, p)
	return ok
}

// treeMayHoldSecrets reports whether a directory read whole (grep -r, rg --hidden, tar c)
// may hold a secret file: the workspace itself (its .env), anything outside it, or a
// directory only known at run time. The file tools skip deny_names inside a tree; a shell
// command cannot.
func (w *walker) treeMayHoldSecrets(info pathInfo) bool {
	switch info.class {
	case pathWorkspace, pathHarmless, pathScratch, pathDevice, pathSocket:
		return false
	}
	return true
}
