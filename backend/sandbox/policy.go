package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Mode is the configured sandbox: "auto" (on wherever the kernel supports it), "landlock"
// (required: refuse to run without it) or "off". A backend whose helper can have namespaces
// of its own also takes "namespaces" (required: refuse to run without them); to this
// package's Landlock + seccomp wall that is auto.
type Mode string

// Modes.
const (
	ModeAuto       Mode = "auto"
	ModeNamespaces Mode = "namespaces"
	ModeLandlock   Mode = "landlock"
	ModeOff        Mode = "off"
)

// ParseMode checks a configured mode; empty means auto.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", ModeAuto:
		return ModeAuto, nil
	case ModeLandlock, ModeOff, ModeNamespaces:
		return Mode(s), nil
	}
	return "", fmt.Errorf("sandbox: %q is not one of auto, namespaces, landlock, off", s)
}

// Policy is what commands may reach. Paths are absolute as the place that runs the commands
// sees them; paths that do not exist are left out.
type Policy struct {
	// ReadRoots may be read (and their programs run); WriteRoots may also be written.
	ReadRoots  []string
	WriteRoots []string
	// TempDir is the session's private scratch directory, readable and writable.
	TempDir string
	// Home is the user's home directory: never granted whole, only the toolchain
	// directories in [HomeReadable] beneath it.
	Home string
	// SystemRead lists the system and toolchain directories programs need to run; nil means
	// [DefaultSystemRead] plus the Go toolchain in use.
	SystemRead []string
	// Protected paths are never readable or writable whatever the roots say: the
	// configuration, the ledger, the session state. Credential directories under Home
	// ([CredentialDirs]) and [SystemSecrets] are added.
	Protected []string
	// Hidden reports whether a path (relative to the root being scanned, slash-separated)
	// matches deny_names; matches found under the read and write roots when the sandbox is
	// built are protected. Nil hides nothing.
	Hidden func(rel string) bool
	// ScanLimit bounds how many entries the deny_names scan visits (default
	// [DefaultScanLimit]).
	ScanLimit int
	// Network is the TCP access commands get.
	Network Network
	// PrivateIPC says each command runs in an IPC namespace of its own (the namespace
	// sandbox makes one): SysV IPC and POSIX message queues then reach only the command's
	// own, and the filter leaves them alone. Otherwise they are refused: their objects are
	// named by numbers and names every process of the same user can use.
	PrivateIPC bool
	// HostReadOnly says the namespace sandbox mounts everything outside the write roots
	// read-only: chmod, utime and xattrs there fail (EROFS) although Landlock does not
	// govern them, and the notes do not list them as left open.
	HostReadOnly bool
}

// Network is the TCP access a sandbox grants. The zero value allows no TCP connect or bind
// at all. Other helpers (the egress proxy) add ports here: an allowlist proxy on loopback
// port P is reached with ConnectTCP: []uint16{P}.
type Network struct {
	// Unrestricted leaves TCP alone (no Landlock network rules, no socket filter).
	Unrestricted bool
	// ConnectTCP and BindTCP are the ports commands may connect to and bind.
	ConnectTCP []uint16
	BindTCP    []uint16
}

// DefaultSystemRead are the directories programs need: binaries, libraries, configuration,
// and the kernel's views of processes and devices (read-only).
var DefaultSystemRead = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc", "/sys"}

// SystemSecrets are paths under the system directories that are never readable.
var SystemSecrets = []string{"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/ssh", "/etc/ssl/private", "/etc/security/opasswd", "/etc/sudoers", "/etc/sudoers.d", "/etc/docker", "/etc/kubernetes"}

// Devices are the device files commands may read and write.
var Devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// HomeReadable are the directories and files under the home directory that toolchains read:
// caches, module stores, installed tools, git's own configuration. They are read-only.
var HomeReadable = []string{"go", ".cache", ".cargo", ".rustup", ".npm", ".nvm", ".pyenv", ".rbenv", ".local/bin", ".local/lib", ".gitconfig", ".config/git", ".m2", ".gradle"}

// CredentialDirs are the places under the home directory where clients and toolchains keep
// credentials: never readable, even beneath a toolchain directory in [HomeReadable] or a root
// that contains the home directory. An entry is a file or a directory (everything in it).
// One entry per store, so that each is tested (integration's credential table); stores that
// appear later beneath a granted directory are kept out from the next command on (see
// [layout.Watch]).
var CredentialDirs = []string{
	// keys and cloud and cluster access
	".ssh", ".gnupg", ".aws", ".config/gcloud", ".azure", ".kube", ".docker", ".oci",
	".config/doctl", ".s3cfg", ".boto", ".vault-token", ".terraform.d/credentials.tfrc.json",
	// git and forges
	".git-credentials", ".config/git/credentials", ".config/gh", ".config/hub", ".config/glab-cli",
	// package registries
	".netrc", ".npmrc", ".yarnrc.yml", ".pypirc", ".config/pypoetry/auth.toml",
	".cargo/credentials.toml", ".cargo/credentials", ".gem/credentials",
	".config/composer/auth.json", ".composer/auth.json", ".nuget/NuGet/NuGet.Config",
	".m2/settings.xml", ".m2/settings-security.xml", ".gradle/gradle.properties",
	".ivy2/.credentials", ".sbt/credentials",
	// model hubs
	".cache/huggingface/token", ".cache/huggingface/stored_tokens", ".huggingface/token",
	// databases and sync tools
	".pgpass", ".my.cnf", ".config/rclone/rclone.conf",
	// keyrings, password stores, Airlock's own state
	".password-store", ".local/share/keyrings", ".cache/airlock", ".local/state/airlock",
}

// grant is one Landlock rule: a path and whether it may be written. listOnly marks a
// directory split around a protected path: its names may be listed, nothing else.
type grant struct {
	Path     string
	Write    bool
	Dir      bool
	ListOnly bool
}

// fsView is what plan needs of the filesystem, so tests can give it a fake one.
type fsView interface {
	// resolve returns the path with symlinks resolved, or an error when it does not exist.
	resolve(p string) (string, error)
	// lstat reports whether p is a directory and whether it is a symlink.
	lstat(p string) (dir, link bool, err error)
	// list returns the entries of directory p, each with its kind as the directory read
	// gives it: a walk needs no lstat per entry (a thousand of them for /usr/bin).
	list(p string) ([]dirEntry, error)
}

// dirEntry is one entry of a directory: its name, and whether it is a directory or a symlink
// (not followed).
type dirEntry struct {
	name      string
	dir, link bool
}

type osView struct{}

func (osView) resolve(p string) (string, error) { return filepath.EvalSymlinks(p) }
func (osView) lstat(p string) (bool, bool, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return false, false, err
	}
	return fi.IsDir(), fi.Mode()&os.ModeSymlink != 0, nil
}

// memoView is osView for one plan: each path it resolves or lstats is looked up once, and a
// path is resolved from its resolved parent. A plan resolves some sixty protected paths under
// a handful of directories (the home, /etc); filepath.EvalSymlinks lstat'ed every component of
// every one of them, 40 % of a plan's time. Only a plan's own lookups are kept: a plan is a
// look at the filesystem at one moment, and the next one looks again.
type memoView struct {
	osView
	resolved map[string]pathResult
	lstats   map[string]lstatResult
}

type pathResult struct {
	path string
	err  error
}

type lstatResult struct {
	dir, link bool
	err       error
}

func newMemoView() *memoView {
	return &memoView{resolved: map[string]pathResult{}, lstats: map[string]lstatResult{}}
}

func (m *memoView) lstat(p string) (bool, bool, error) {
	r, ok := m.lstats[p]
	if !ok {
		r.dir, r.link, r.err = m.osView.lstat(p)
		m.lstats[p] = r
	}
	return r.dir, r.link, r.err
}

// resolve is filepath.EvalSymlinks: p's parent resolved (once), then p's last component
// looked at there; a symbolic link there is resolved by EvalSymlinks, from the resolved
// parent.
func (m *memoView) resolve(p string) (string, error) {
	if r, ok := m.resolved[p]; ok {
		return r.path, r.err
	}
	var r pathResult
	if p == "/" || !filepath.IsAbs(p) || filepath.Clean(p) != p {
		r.path, r.err = filepath.EvalSymlinks(p)
	} else if parent, err := m.resolve(filepath.Dir(p)); err != nil {
		r.err = err
	} else {
		full := filepath.Join(parent, filepath.Base(p))
		_, link, err := m.lstat(full)
		switch {
		case err != nil:
			r.err = err
		case link:
			r.path, r.err = filepath.EvalSymlinks(full)
		default:
			r.path = full
		}
	}
	m.resolved[p] = r
	return r.path, r.err
}

func (osView) list(p string) ([]dirEntry, error) {
	// os.ReadDir takes each kind from the directory read (d_type), and lstats an entry only
	// where the filesystem does not say; the entries come sorted by name.
	ents, err := os.ReadDir(p)
	out := make([]dirEntry, 0, len(ents))
	for _, e := range ents {
		out = append(out, dirEntry{name: e.Name(), dir: e.IsDir(), link: e.Type()&os.ModeSymlink != 0})
	}
	return out, err
}

// layout is a computed set of rules and what was left out and why.
type layout struct {
	Grants []grant
	// Protected are the resolved protected paths that exist.
	Protected []string
	// Split are the directories reduced to listing because a protected path lies in them.
	Split []string
	// Watch are granted directories a credential store that does not exist yet would appear
	// in (its nearest existing ancestor), each with the names it would appear under there:
	// when one of those names appears, the sandbox plans again, so that a credential store
	// made later (a `cargo login`, a token saved by the user) is kept out from the next
	// command on rather than granted with the directory around it.
	Watch []watchDir
	// Notes say what the layout could not do (a root inside a protected path, a scan cut
	// short).
	Notes []string
	// ScanCut is true when the deny_names scan stopped at its limit: matches beyond it are
	// not protected.
	ScanCut bool
}

// plan turns a policy into Landlock grants. It is pure over fsView.
func plan(p Policy, fs fsView) layout {
	var l layout
	missing := protect(p, fs, &l)
	grantRoots(fs, planRoots(p), &l)
	l.Watch = watchFor(fs, missing, l.Grants)
	return l
}

// protect fills l.Protected with the protected paths that exist — the policy's, the system
// secrets, the credential stores under the home directory and the deny_names matches under
// every root — and returns the credential stores that do not exist yet.
func protect(p Policy, fs fsView, l *layout) (missing []string) {
	protected := map[string]bool{}
	addProtected := func(path string) {
		if path == "" || !filepath.IsAbs(path) {
			return
		}
		if r, err := fs.resolve(path); err == nil {
			protected[r] = true
		}
		// The path as named is kept too: a symlink to it that is itself named is not
		// granted by the rules built below either way.
		protected[filepath.Clean(path)] = true
	}
	for _, pp := range p.Protected {
		addProtected(pp)
	}
	for _, s := range SystemSecrets {
		addProtected(s)
	}
	if p.Home != "" {
		for _, c := range CredentialDirs {
			path := filepath.Join(p.Home, c)
			addProtected(path)
			if _, _, err := fs.lstat(path); err != nil {
				missing = append(missing, path)
			}
		}
	}
	if p.Hidden != nil {
		limit := p.scanLimit()
		seen := 0
		for _, root := range append(append([]string(nil), p.ReadRoots...), p.WriteRoots...) {
			r, err := fs.resolve(root)
			if err != nil {
				continue
			}
			if !scanHidden(fs, r, "", p.Hidden, &seen, limit, addProtected) {
				l.ScanCut = true
				l.Notes = append(l.Notes, fmt.Sprintf("deny_names scan stopped after %d entries: matches beyond it are not kernel-protected (the path policy still refuses them to the file tools)", limit))
				break
			}
		}
	}
	for path := range protected {
		if _, _, err := fs.lstat(path); err == nil {
			l.Protected = append(l.Protected, path)
		}
	}
	sort.Strings(l.Protected)
	return missing
}

// planRoot is a directory the policy grants, before protected paths are taken out of it.
type planRoot struct {
	path  string
	write bool
}

// planRoots lists what the policy grants: the write roots and temporary directory, the read
// roots, the system's read-only directories, the readable parts of the home directory and
// the devices.
func planRoots(p Policy) []planRoot {
	var roots []planRoot
	for _, r := range p.WriteRoots {
		roots = append(roots, planRoot{r, true})
	}
	if p.TempDir != "" {
		roots = append(roots, planRoot{p.TempDir, true})
	}
	for _, r := range p.ReadRoots {
		roots = append(roots, planRoot{r, false})
	}
	sys := p.SystemRead
	if sys == nil {
		sys = DefaultSystemRead
	}
	for _, r := range sys {
		roots = append(roots, planRoot{r, false})
	}
	if p.Home != "" {
		for _, h := range HomeReadable {
			roots = append(roots, planRoot{filepath.Join(p.Home, h), false})
		}
	}
	for _, d := range Devices {
		roots = append(roots, planRoot{d, true})
	}
	return roots
}

// grantRoots turns roots into l.Grants: a root with no protected path in it is granted
// whole, one inside a protected path not at all (with a note), and one with protected
// paths below it is split around them.
func grantRoots(fs fsView, roots []planRoot, l *layout) {
	seen := map[grant]bool{}
	add := func(g grant) {
		// A read grant under the same path as a write grant adds nothing.
		if w := g; !g.Write && !g.ListOnly {
			w.Write = true
			if seen[w] {
				return
			}
		}
		if !seen[g] {
			seen[g] = true
			l.Grants = append(l.Grants, g)
		}
	}
	for _, r := range roots {
		if !filepath.IsAbs(r.path) {
			continue
		}
		real, err := fs.resolve(r.path)
		if err != nil {
			continue
		}
		if in := containedIn(l.Protected, real); in != "" {
			l.Notes = append(l.Notes, fmt.Sprintf("%s is not granted: it lies in the protected %s", r.path, in))
			continue
		}
		dir, _, err := fs.lstat(real)
		if err != nil {
			continue
		}
		below := beneath(l.Protected, real)
		if len(below) == 0 {
			add(grant{Path: real, Write: r.write, Dir: dir})
			continue
		}
		split(fs, real, r.write, below, add, &l.Split)
	}
	sort.Strings(l.Split)
	l.Split = dedupe(l.Split)
}

// watchDir is a directory a missing credential store would appear in, and the names of its
// entries it would appear under (the first component of each store's path below it).
type watchDir struct {
	Dir   string
	Names []string
}

// watchFor returns, for each missing credential store, its nearest existing ancestor when that
// lies in a directory granted whole (the directories split around a protected path are
// stamped already), with the name the store would appear under there.
func watchFor(fs fsView, missing []string, grants []grant) []watchDir {
	names := map[string][]string{}
	for _, m := range missing {
		a := filepath.Dir(m)
		for a != "/" {
			if isDir, _, err := fs.lstat(a); err == nil && isDir {
				break
			}
			a = filepath.Dir(a)
		}
		real, err := fs.resolve(a)
		if err != nil {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(m, strings.TrimSuffix(a, "/")+"/"), "/")
		for _, g := range grants {
			if g.Dir && !g.ListOnly && (real == g.Path || strings.HasPrefix(real, g.Path+"/")) {
				names[real] = append(names[real], name)
				break
			}
		}
	}
	out := make([]watchDir, 0, len(names))
	for d, ns := range names {
		sort.Strings(ns)
		out = append(out, watchDir{Dir: d, Names: dedupe(ns)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out
}

// split grants dir's entries except the protected paths below it, recursing into the
// entries that hold one; dir itself may only be listed.
func split(fs fsView, dir string, write bool, protected []string, add func(grant), splits *[]string) {
	add(grant{Path: dir, Dir: true, ListOnly: true})
	*splits = append(*splits, dir)
	ents, err := fs.list(dir)
	if err != nil {
		return
	}
	for _, ent := range ents {
		e := filepath.Join(dir, ent.name)
		if containedIn(protected, e) != "" {
			continue
		}
		isDir := ent.dir
		if ent.link {
			// A symlink is governed by the rules of what it points to; granting it here
			// would grant its target.
			continue
		}
		if below := beneath(protected, e); len(below) > 0 && isDir {
			split(fs, e, write, below, add, splits)
			continue
		}
		add(grant{Path: e, Write: write, Dir: isDir})
	}
}

// scanHidden walks dir looking for deny_names matches; it returns false when the limit cut
// it short.
func scanHidden(fs fsView, dir, rel string, hidden func(string) bool, seen *int, limit int, found func(string)) bool {
	ents, err := fs.list(dir)
	if err != nil {
		return true
	}
	for _, ent := range ents {
		n := ent.name
		*seen++
		if *seen > limit {
			return false
		}
		r := n
		if rel != "" {
			r = rel + "/" + n
		}
		e := filepath.Join(dir, n)
		if hidden(r) {
			found(e)
			continue
		}
		if ent.link || !ent.dir || n == ".git" {
			continue
		}
		if !scanHidden(fs, e, r, hidden, seen, limit, found) {
			return false
		}
	}
	return true
}

// DefaultScanLimit is how many entries a deny_names scan visits when the policy does not say.
const DefaultScanLimit = 20000

// scanLimit is p.ScanLimit or its default.
func (p Policy) scanLimit() int {
	if p.ScanLimit > 0 {
		return p.ScanLimit
	}
	return DefaultScanLimit
}

// FindHidden returns the deny_names matches beneath roots as they are now (at most
// [DefaultScanLimit] entries visited), for a helper that cannot take the matcher itself;
// complete is false when the scan stopped at that limit.
func FindHidden(roots []string, hidden func(rel string) bool) (found []string, complete bool) {
	if hidden == nil {
		return nil, false
	}
	var out []string
	seen := 0
	for _, root := range roots {
		r, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue
		}
		if !scanHidden(osView{}, r, "", hidden, &seen, DefaultScanLimit, func(p string) { out = append(out, p) }) {
			return out, false
		}
	}
	return out, true
}

// containedIn returns the protected path that p is or lies beneath, or "".
func containedIn(protected []string, p string) string {
	for _, q := range protected {
		if p == q || strings.HasPrefix(p, q+"/") {
			return q
		}
	}
	return ""
}

// beneath returns the protected paths strictly below dir.
func beneath(protected []string, dir string) []string {
	var out []string
	for _, q := range protected {
		if dir == "/" && q != "/" || strings.HasPrefix(q, dir+"/") {
			out = append(out, q)
		}
	}
	return out
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// ErrUnsupported marks a sandbox that the kernel cannot deliver.
var ErrUnsupported = errors.New("sandbox unavailable")
