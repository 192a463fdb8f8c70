package shellrisk

import (
	"slices"
	"strings"
)

// archiveFile judges the archive an archiver's -f names: written when a flag that makes
// the program write it is given (tar -c -f ../out/a.tar), read otherwise (tar -x -f a.tar).
// "-" is standard input or output, not a file.
func (w *walker) archiveFile(p *program, s scanned, seg string) {
	af := p.archiveFile
	if af == nil {
		return
	}
	mode := pathsRead
	for _, f := range s.flags {
		name, _, _ := strings.Cut(f, "=")
		if slices.Contains(af.WrittenBy, longFlag(p, name, af.WrittenBy)) || clusterHas(p, name, af.WrittenBy) {
			mode = pathsWrite
			break
		}
	}
	for _, v := range s.values {
		if !slices.Contains(af.Flags, v.flag) || (v.val.text == "-" && !v.val.dynamic) {
			continue
		}
		w.pathEffect(v.val, mode, false, seg)
	}
}

// longFlag expands a long flag abbreviated as getopt_long allows (--cre for --create) to
// the one of keys it stands for; anything else is returned as it is.
func longFlag(p *program, name string, keys []string) string {
	if !strings.HasPrefix(name, "--") || slices.Contains(keys, name) {
		return name
	}
	var hit []string
	for _, k := range keys {
		if strings.HasPrefix(k, name) {
			hit = append(hit, k)
		}
	}
	if len(hit) == 1 {
		return hit[0]
	}
	return name
}

// clusterHas reports whether a short flag cluster (-cvf) holds one of keys before any
// letter that takes a value (whose value is the rest of the cluster).
func clusterHas(p *program, t string, keys []string) bool {
	if strings.HasPrefix(t, "--") || !strings.HasPrefix(t, "-") || len(t) < 3 || p.wholeFlags {
		return false
	}
	for i := 1; i < len(t); i++ {
		k := "-" + t[i:i+1]
		if slices.Contains(keys, k) {
			return true
		}
		if p.valueFlags[k] {
			return false
		}
	}
	return false
}

// oldStyle rewrites an old-style first argument (tar cf FILE a.txt) as the flags it stands
// for, each value flag followed by its value: -c -f FILE a.txt. A first argument that is
// not all letters, or a program without old_style, is left as it is.
func oldStyle(p *program, args []arg) []arg {
	if !p.oldStyle || len(args) == 0 || args[0].dynamic || !isLetters(args[0].text) {
		return args
	}
	out := make([]arg, 0, len(args)+len(args[0].text))
	next := 1
	for _, c := range args[0].text {
		f := args[0]
		f.text = "-" + string(c)
		out = append(out, f)
		if p.valueFlags[f.text] && next < len(args) {
			out = append(out, args[next])
			next++
		}
	}
	return append(out, args[next:]...)
}

func isLetters(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}
