package shellrisk

// archiveFile judges the archive an archiver's -f names: written when a flag that makes
// the program write it is given, in any spelling (tar -c -f ../out/a.tar, tar -cf, --cre),
// read otherwise (tar -x -f a.tar). "-" is standard input or output, not a file.
func (w *walker) archiveFile(p *program, s scanned, seg string) {
	if len(p.archiveFlags) == 0 {
		return
	}
	mode := pathsRead
	if hasAny(p, s.flags, p.archiveWriters, true) {
		mode = pathsWrite
	}
	for _, v := range s.values {
		if p.archiveFlags[v.flag] && !(v.val.text == "-" && !v.val.dynamic) {
			w.pathEffect(v.val, mode, false, seg)
		}
	}
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
