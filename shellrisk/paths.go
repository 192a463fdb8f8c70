package shellrisk

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
	pathScratch                        // the session's private temp dir: outside, but only this session's
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
	// envFile is a .env file: secret to read, not to write.
	envFile bool
	// vcsConfig is a repository's configuration or hooks, which git runs.
	vcsConfig bool
	clean     string
}

// classifyPath judges a path operand. Relative paths are resolved against the directory a
// preceding cd moved to, so `cd / && rm -rf *` is judged at /; when a cd may or may not
// have run, against each directory the shell may be in, keeping the worst.
func (w *walker) classifyPath(a arg) pathInfo {
	text := a.text
	if text == "" && !a.dynamic {
		return pathInfo{class: pathWorkspace, clean: "."}
	}
	if strings.HasPrefix(text, "~") && !a.tilde {
		text = "./" + text
	}
	if a.dynamic {
		// What is known of the path may still name a secret: /home/$USER/.ssh/id_rsa.
		pattern := strings.ReplaceAll(text, dynamicMark, "*")
		return pathInfo{class: pathDynamic, secret: w.maySecret(pattern)}
	}
	pattern := text
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
	var worst pathInfo
	for i, cwd := range w.cwdsFor(text) {
		info := w.classifyAt(cwd, text)
		if a.glob && !info.secret {
			info.secret = w.maySecretAt(cwd, pattern)
		}
		if i == 0 || info.rank() > worst.rank() {
			worst = info
		}
	}
	return worst
}

// cwdsFor returns the directories a path is resolved against: none matter for an absolute
// path; nil when the directory is unknown.
func (w *walker) cwdsFor(text string) []string {
	if strings.HasPrefix(text, "/") || strings.HasPrefix(text, "~") {
		return cwdHere
	}
	if w.st.cwdDynamic {
		return cwdUnknown
	}
	return w.st.cwds
}

// cwdHere and cwdUnknown are what cwdsFor returns for a path any directory resolves the
// same and for an unknown directory; callers only read them.
var (
	cwdHere    = []string{"."}
	cwdUnknown = []string{dynamicMark}
)

// rank orders judgements from harmless to worst, for a path that may be in several places.
var classRank = [...]int{
	pathHarmless: 0, pathWorkspace: 1, pathWorkspaceRoot: 2, pathScratch: 3, pathOutside: 4,
	pathSystem: 5, pathSystemDir: 6, pathDynamic: 7, pathRoot: 8, pathDevice: 9, pathSocket: 9,
}

func (p pathInfo) rank() int {
	r := classRank[p.class] * 2
	if p.secret || p.envFile {
		r++
	}
	return r
}

// classifyAt judges a path with its glob cut off, relative to cwd.
func (w *walker) classifyAt(cwd, text string) pathInfo {
	if cwd == dynamicMark {
		return pathInfo{class: pathDynamic}
	}
	abs := strings.HasPrefix(text, "/") || strings.HasPrefix(text, "~")
	if !abs {
		text = joinPath(cwd, text)
		// Only the directory cd moved to can make a relative path absolute: a quoted "~"
		// stays a file named ~.
		abs = strings.HasPrefix(cwd, "/") || strings.HasPrefix(cwd, "~")
	}
	if !abs {
		c := path.Clean(text)
		switch {
		case strings.Trim(c, "./") == "" && strings.Count(c, "..") >= 3:
			// ../../.. from a workspace in /home/user/src is /.
			return pathInfo{class: pathRoot, clean: c}
		case c == "..", strings.HasPrefix(c, "../"):
			return pathInfo{class: pathOutside, clean: c}
		case c == ".":
			return pathInfo{class: pathWorkspaceRoot, clean: c}
		}
		return pathInfo{class: pathWorkspace, clean: c, envFile: w.envFile(c), vcsConfig: w.vcsConfig(c)}
	}
	if rest, ok := procCwd(text); ok {
		// /proc/PID/cwd is wherever that process is.
		return pathInfo{class: pathDynamic, secret: w.maySecret("*/" + rest)}
	}
	c := cleanAbs(text)
	p := &w.rules.paths
	// /proc/PID/root and /proc/PID/cwd lead back into the file system.
	if rest, ok := procAlias(c); ok {
		c = rest
	}
	if rel, ok := w.cx.inWorkspace(c); ok {
		// An absolute path into the workspace is the workspace.
		if rel == "." {
			return pathInfo{class: pathWorkspaceRoot, clean: rel}
		}
		return pathInfo{class: pathWorkspace, clean: rel, envFile: w.envFile(rel), vcsConfig: w.vcsConfig(rel)}
	}
	info := pathInfo{class: pathOutside, clean: c}
	// Another user's home is judged as the home: /home/bob/.ssh is ~/.ssh.
	home := homeAlias(c)
	inHome := home != c
	info.secret = (underAny(c, p.Secrets) || inHome && underAny(home, p.Secrets)) &&
		!matchAny(c, p.NotSecrets) && !(inHome && matchAny(home, p.NotSecrets))
	info.envFile = w.envFile(c)
	info.vcsConfig = w.vcsConfig(c)
	switch {
	case matchAny(c, p.Harmless):
		info.class = pathHarmless
	case matchAny(c, p.Sockets):
		info.class = pathSocket
	case matchAny(c, p.Devices), strings.HasPrefix(c, "/dev/") && !underAny(c, []string{"/dev/shm", "/dev/mqueue"}):
		// Anything under /dev that is not known to be harmless is taken for a device.
		info.class = pathDevice
	case matchAny(c, p.Roots):
		info.class = pathRoot
	case !info.secret && underAny(c, w.cx.Scratch):
		// The session's own scratch directory, itself included: nothing else uses it.
		info.class = pathScratch
	case matchAny(c, p.Scratch):
		// The scratch directory itself is shared with everything else on the machine; only
		// what is below it is scratch.
		info.class = pathOutside
	case underAny(c, p.Scratch):
		info.class = pathScratch
	case matchAny(c, p.System), inHome && matchAny(home, p.System):
		info.class = pathSystemDir
	case underAny(c, p.System), inHome && underAny(home, p.System):
		info.class = pathSystem
	}
	return info
}

// joinPath joins a relative path to a directory, keeping a ~ directory's meaning: ~/.. is
// /home.
func joinPath(dir, rel string) string {
	if strings.HasPrefix(dir, "~") {
		return cleanAbs(dir + "/" + rel)
	}
	if dir == "." && !strings.HasPrefix(rel, "/") {
		// path.Join(".", rel), without the copy it makes to join them.
		return path.Clean(rel)
	}
	return path.Join(dir, rel)
}

// procAlias maps /proc/PID/root/… and /proc/PID/cwd/… to the path they reach.
func procAlias(c string) (string, bool) {
	rest, ok := strings.CutPrefix(c, "/proc/")
	if !ok {
		return "", false
	}
	_, rest, _ = strings.Cut(rest, "/")
	for _, link := range []string{"root", "cwd"} {
		if rest == link {
			return "/", true
		}
		if r, ok := strings.CutPrefix(rest, link+"/"); ok {
			return path.Clean("/" + r), true
		}
	}
	return "", false
}

// homeAlias maps a path in a user's home (/home/bob/x, /Users/bob/x) to its ~ form.
func homeAlias(c string) string {
	for _, pre := range []string{"/home/", "/Users/"} {
		if rest, ok := strings.CutPrefix(c, pre); ok {
			if _, tail, ok := strings.Cut(rest, "/"); ok {
				return "~/" + tail
			}
			return "~"
		}
	}
	return c
}

// cleanAbs cleans an absolute or home-relative path, keeping the ~ form so that rules can
// name ~/.ssh. ~user is taken to be /home/user, and ~/.. is /home.
func cleanAbs(p string) string {
	if !strings.HasPrefix(p, "~") {
		return path.Clean(p)
	}
	rest := p[1:]
	if rest != "" && rest[0] != '/' {
		user, tail, _ := strings.Cut(rest, "/")
		return path.Clean("/home/" + user + "/" + tail)
	}
	c := path.Clean("~" + rest)
	if c == "~" || strings.HasPrefix(c, "~/") {
		return c
	}
	// The path climbed out of the home directory.
	return path.Clean("/home/" + c)
}

// matchAny reports whether p is one of the entries, each a path or a glob.
func matchAny(p string, entries []string) bool {
	for _, e := range entries {
		if e == p {
			return true
		}
		if !globMayMatch(e, p) {
			continue
		}
		if ok, _ := path.Match(e, p); ok {
			return true
		}
	}
	return false
}

// globMayMatch reports whether the glob e may match p or a directory above it: e has a
// meta character, and p starts with the literal text before the first one (a match of p,
// or of an ancestor of p, which is a prefix of p, starts with it). It spares path.Match
// for most entries of the long lists paths are judged against.
func globMayMatch(e, p string) bool {
	i := metaIndex(e)
	return i >= 0 && strings.HasPrefix(p, e[:i])
}

// metaIndex is strings.IndexAny(s, `*?[\`), the first character path.Match gives a
// meaning, without the set IndexAny builds at each call: it runs for every entry of the
// path lists at every path judged.
func metaIndex(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			return i
		}
	}
	return -1
}

// isUnder reports whether p is below the directory e: strings.HasPrefix(p, e+"/") with
// e's trailing slash trimmed, without building e+"/".
func isUnder(p, e string) bool {
	e = strings.TrimSuffix(e, "/")
	return len(p) > len(e) && p[len(e)] == '/' && p[:len(e)] == e
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
		if e == p || isUnder(p, e) {
			return true
		}
		if !globMayMatch(e, p) {
			continue // a literal entry matches only as above
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
	if len(w.cx.Protected) > 0 && w.cx.reachesProtected(info, recursive || a.glob) &&
		!(mode == pathsRead && recursive && w.hiddenFromTree(info) && !w.cx.reachesProtected(info, false)) {
		// A tree read whole where the sandbox hides Airlock's files as it hides secrets
		// does not reach them; naming one does.
		w.add(codeAirlockState, seg)
	}
	switch mode {
	case pathsRead:
		if info.secret || info.envFile || recursive && w.treeMayHoldSecrets(info) && !w.hiddenFromTree(info) {
			w.add(codeCredentialAccess, seg)
		}
		if info.class == pathDevice {
			w.add(codeDeviceRead, seg)
		}
	case pathsWrite:
		if w.fetching {
			if w.fetched == nil {
				w.fetched = map[string]bool{}
			}
			w.fetched[info.clean] = true
		}
		if info.class == pathWorkspace || info.class == pathWorkspaceRoot || info.class == pathScratch {
			// A program that reads by default still writes here (uniq IN OUT, sort -o).
			w.add(codeWritesFiles, seg)
		}
		w.writeEffect(info, recursive, seg)
	case pathsDelete, pathsMove:
		if mode == pathsMove {
			recursive = true
		}
		if info.class == pathWorkspace || info.class == pathWorkspaceRoot || info.class == pathScratch {
			w.add(codeDeletesFiles, seg)
		}
		w.deleteEffect(info, recursive, seg)
	}
}

// hiddenFromTree reports whether a tree read whole is the workspace where the context says
// its secrets are kept unreadable (see [Context.SecretsHidden]).
func (w *walker) hiddenFromTree(info pathInfo) bool {
	return w.cx.SecretsHidden && (info.class == pathWorkspaceRoot || info.class == pathWorkspace)
}

// vcsConfig reports whether a path is a repository's configuration or hooks, at any depth
// (.git/config, sub/.git/hooks/pre-commit).
func (w *walker) vcsConfig(c string) bool {
	for _, e := range w.rules.paths.VCSConfig {
		if hasComponents(c, e) {
			return true
		}
	}
	return false
}

// hasComponents reports whether e is c or whole components of it: c is e, ends with /e,
// starts with e/ or holds /e/. It builds none of those strings.
func hasComponents(c, e string) bool {
	if c == e {
		return true
	}
	for i := 0; i <= len(c); {
		j := strings.Index(c[i:], e)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(e)
		if (j == 0 || c[j-1] == '/') && (end == len(c) || c[end] == '/') {
			return true
		}
		i = j + 1
	}
	return false
}

func (w *walker) writeEffect(info pathInfo, recursive bool, seg string) {
	if info.vcsConfig {
		w.add(codeVCSConfigWrite, seg)
	}
	if w.rootsDecide(info, seg) {
		return
	}
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
	if info.vcsConfig {
		w.add(codeVCSConfigWrite, seg)
	}
	if w.rootsDecide(info, seg) {
		return
	}
	if isRepository(info.clean) {
		// rm -rf .git takes every commit, branch and stash with it.
		w.add(codeIrreversibleLoss, seg)
	}
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

// rootsDecide applies the context's write roots to a write or a delete: in the workspace
// but outside every root it is write_outside_roots; outside the workspace but under a root
// it is a plain write, and nothing more is said (it returns true).
func (w *walker) rootsDecide(info pathInfo, seg string) bool {
	roots := w.cx.WriteRoots
	if len(roots) == 0 {
		return false
	}
	switch info.class {
	case pathWorkspace, pathWorkspaceRoot:
		if !underRoots(info.clean, roots) {
			w.add(codeWriteOutsideRoots, seg)
		}
	case pathOutside, pathScratch, pathSystem:
		if !info.secret && strings.HasPrefix(info.clean, "/") && underRoots(info.clean, roots) {
			w.add(codeWritesFiles, seg)
			return true
		}
	}
	return false
}

// underRoots reports whether c is one of the roots or below one; "." holds every path in
// the workspace.
func underRoots(c string, roots []string) bool {
	rel := !strings.HasPrefix(c, "/") && !strings.HasPrefix(c, "~")
	for _, r := range roots {
		if r == "." && rel && c != ".." && !strings.HasPrefix(c, "../") {
			return true
		}
		if c == r || strings.HasPrefix(c, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

// isRepository reports whether a cleaned path is a git repository's own directory or
// inside it (.git, sub/.git, .git/objects).
func isRepository(c string) bool {
	return c == ".git" || strings.HasPrefix(c, ".git/") || strings.HasSuffix(c, "/.git") || strings.Contains(c, "/.git/")
}

// procCwd splits /proc/PID/cwd/REST before .. in REST is cleaned away.
func procCwd(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, "/proc/")
	if !ok {
		return "", false
	}
	_, rest, _ = strings.Cut(rest, "/")
	if rest == "cwd" {
		return "", true
	}
	return strings.CutPrefix(rest, "cwd/")
}
