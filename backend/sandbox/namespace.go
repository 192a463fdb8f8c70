package sandbox

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// A resident helper in namespace mode sees the host through a mount namespace of its own,
// the way bubblewrap builds one for Codex's and Claude Code's Linux sandboxes: the host's
// tree bound read-only, nosuid and nodev; the write roots and the session's temp directory
// bound writable (nosuid, nodev) at the same paths; inside them, the protected paths masked
// by an empty file or directory that nobody may read, and the files git runs code from bound
// read-only. A mount covers one path and leaves its directory alone, so a workspace whose
// root holds .env, the configuration or the ledger still takes new entries (mkdir, git init,
// sed -i) — what a Landlock allow-list cannot give, since it grants hierarchies and never
// takes a path away beneath one.
//
// [PlanNamespace] is the pure part: it turns a [Policy] into a [Namespace], plain data the
// host computes (it holds the deny_names matcher) and the helper applies ([Namespace.Enter]).

// Namespace is the filesystem of a helper in namespace mode: every path is absolute, exists
// on the host, and is where it appears in the helper too.
type Namespace struct {
	// WriteRoots are bound writable (nosuid, nodev); TempDir is one of them.
	WriteRoots []string `json:"write_roots"`
	// ReadRoots are bound read-only where a cover would hide them (a root under /tmp).
	ReadRoots []string `json:"read_roots,omitempty"`
	// Covers get an empty tmpfs, read-only: host scratch and runtime directories (other
	// sessions' files, agent and daemon sockets).
	Covers []string `json:"covers,omitempty"`
	// Pins are bound onto themselves, writable, so that they cannot be renamed or removed
	// (a repository's .git, whose config and hooks are bound read-only beneath it).
	Pins []string `json:"pins,omitempty"`
	// ReadOnly are bound onto themselves read-only: readable, never written, renamed or
	// removed (the files git runs code from).
	ReadOnly []string `json:"read_only,omitempty"`
	// Masks are replaced by an empty file or directory of mode 000, read-only: the
	// configuration, the ledger and state, deny_names matches, credential stores, system
	// secrets.
	Masks []string `json:"masks,omitempty"`
	// MaskDirs marks which masks are directories.
	MaskDirs map[string]bool `json:"mask_dirs,omitempty"`
	// Network gives the helper a network namespace of its own (no interface but a loopback).
	Network bool `json:"network"`
	// User puts the helper in a user namespace (Airlock is not root), mapping the caller's
	// uid and gid to themselves.
	User bool `json:"user"`
	// Notes say what the plan could not do.
	Notes []string `json:"notes,omitempty"`
	// ScanCut: the deny_names scan stopped at its limit, so matches beyond it are not
	// masked (see [Sandbox.HidesDenyNames]).
	ScanCut bool `json:"-"`
}

// Covers are the host directories a helper in namespace mode sees empty: scratch space that
// holds other sessions' and users' files, and runtime directories that hold sockets of
// agents and daemons (ssh-agent, Docker, D-Bus). A read or write root beneath one is bound
// back in.
var Covers = []string{"/tmp", "/var/tmp", "/run", "/var/run"}

// Covered reports whether p, its symlinks resolved, lies under one of the Covers (which the
// namespace sandbox makes empty unless a root brings a path back).
func Covered(p string) bool {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		r = filepath.Clean(p)
	}
	for _, c := range Covers {
		if rc, err := filepath.EvalSymlinks(c); err == nil && containedIn([]string{rc}, r) != "" {
			return true
		}
	}
	return false
}

// GitExecutes are the paths in a repository's .git that make git run a program — hooks,
// the config (core.fsmonitor, core.hooksPath, aliases, filters), the per-worktree config and
// submodules' own configs and hooks. A helper in namespace mode binds them read-only and
// pins .git itself, so that a command can use git but plant nothing a person's own git runs
// later.
var GitExecutes = []string{"config", "config.worktree", "hooks", "modules"}

// PlanNamespace computes the helper's filesystem for p from the filesystem as it is now.
func PlanNamespace(p Policy) Namespace { return planNamespace(p, newMemoView()) }

// planNamespace is PlanNamespace over fs; it is pure.
func planNamespace(p Policy, fs fsView) Namespace {
	var n Namespace
	real := func(paths []string) []string {
		var out []string
		for _, q := range paths {
			if q == "" || !filepath.IsAbs(q) {
				continue
			}
			if r, err := fs.resolve(q); err == nil {
				out = append(out, r)
			}
		}
		return dedupe(sortedCopy(out))
	}
	covers := real(Covers)
	n.WriteRoots = real(append(append([]string(nil), p.WriteRoots...), p.TempDir))
	// The resolver's configuration often lives under /run (systemd-resolved): it is read.
	for _, r := range real(append(append([]string(nil), p.ReadRoots...), "/etc/resolv.conf")) {
		if containedIn(covers, r) != "" && containedIn(n.WriteRoots, r) == "" {
			n.ReadRoots = append(n.ReadRoots, r)
		}
	}
	n.Covers = covers
	bound := append(append([]string(nil), n.WriteRoots...), n.ReadRoots...)
	// A path under a cover is hidden already unless a root brings it back.
	visible := func(q string) bool { return containedIn(covers, q) == "" || containedIn(bound, q) != "" }

	masks := map[string]bool{}
	mask := func(q string) {
		r, err := fs.resolve(q)
		if err != nil || !visible(r) {
			return
		}
		if dir, _, err := fs.lstat(r); err == nil {
			masks[r] = dir
		}
	}
	for _, q := range p.Protected {
		mask(q)
	}
	for _, q := range SystemSecrets {
		mask(q)
	}
	if p.Home != "" {
		for _, c := range CredentialDirs {
			mask(filepath.Join(p.Home, c))
		}
	}
	n.maskDenyNames(fs, p, real(append(append([]string(nil), p.ReadRoots...), n.WriteRoots...)), mask)
	// A root inside a masked path is not bound: the mask wins.
	for _, roots := range []*[]string{&n.WriteRoots, &n.ReadRoots} {
		kept := (*roots)[:0]
		for _, r := range *roots {
			if in := containedIn(keys(masks), r); in != "" {
				n.Notes = append(n.Notes, fmt.Sprintf("%s is not bound: it lies in the protected %s", r, in))
				continue
			}
			kept = append(kept, r)
		}
		*roots = kept
	}
	n.MaskDirs = map[string]bool{}
	for q, dir := range masks {
		if containedIn(without(keys(masks), q), q) != "" {
			continue // inside another mask
		}
		n.Masks = append(n.Masks, q)
		if dir {
			n.MaskDirs[q] = true
		}
	}
	sort.Strings(n.Masks)
	sort.Strings(n.Pins)
	sort.Strings(n.ReadOnly)
	return n
}

// addGit records a repository's .git found at path: pinned when it is a directory, with
// what git runs code from bound read-only; bound read-only whole when it is a file (a gitdir
// pointer, whose target another rule governs).
func (n *Namespace) addGit(fs fsView, path string) {
	dir, link, err := fs.lstat(path)
	if err != nil || link {
		return
	}
	if !dir {
		n.ReadOnly = append(n.ReadOnly, path)
		return
	}
	n.Pins = append(n.Pins, path)
	for _, g := range GitExecutes {
		q := filepath.Join(path, g)
		if _, link, err := fs.lstat(q); err == nil && !link {
			n.ReadOnly = append(n.ReadOnly, q)
		}
	}
}

// maskDenyNames masks the deny_names matches under every root, read roots as well as write
// roots (sorted, resolved): the host's tree is visible read-only, so a match in a read root
// would otherwise be readable. A repository's .git is pinned only in a write root; elsewhere
// the tree is read-only already.
func (n *Namespace) maskDenyNames(fs fsView, p Policy, roots []string, mask func(string)) {
	pinGit := func(git string) {
		if containedIn(n.WriteRoots, git) != "" {
			n.addGit(fs, git)
		}
	}
	seen, limit := 0, p.scanLimit()
	var scanned []string
	for _, root := range roots {
		if containedIn(scanned, root) != "" {
			continue // beneath a root scanned already (sorted: a parent comes first)
		}
		scanned = append(scanned, root)
		if !scanRoot(fs, root, "", p.Hidden, &seen, limit, mask, pinGit) {
			n.Notes = append(n.Notes, fmt.Sprintf("deny_names scan stopped after %d entries: matches beyond it are not masked (the path policy still refuses them to the file tools)", limit))
			n.ScanCut = true
			return
		}
	}
}

// scanRoot walks dir for deny_names matches (found) and repositories' .git entries (git),
// never into a .git; it returns false when the limit cut it short.
func scanRoot(fs fsView, dir, rel string, hidden func(string) bool, seen *int, limit int, found, git func(string)) bool {
	ents, err := fs.list(dir)
	if err != nil {
		return true
	}
	for _, ent := range ents {
		name := ent.name
		*seen++
		if *seen > limit {
			return false
		}
		r := name
		if rel != "" {
			r = rel + "/" + name
		}
		e := filepath.Join(dir, name)
		if name == ".git" {
			git(e)
			continue
		}
		if hidden != nil && hidden(r) {
			found(e)
			continue
		}
		if ent.link || !ent.dir {
			continue
		}
		if !scanRoot(fs, e, r, hidden, seen, limit, found, git) {
			return false
		}
	}
	return true
}

// Describe says in a line each what the namespace enforces.
func (n Namespace) Describe() []string {
	w := strings.Join(n.WriteRoots, ", ")
	net := "the host's network"
	if n.Network {
		net = "a network namespace of its own (no interface but loopback)"
	}
	out := []string{
		"sandbox: commands run in a resident helper in its own mount, PID, IPC and UTS namespaces: the host's files read-only (nosuid, nodev); writable only " + w,
		fmt.Sprintf("sandbox: %d protected paths masked (the configuration, the ledger and state, deny_names matches, credential stores, system secrets); %d git paths that run code bound read-only; %s empty", len(n.Masks), len(n.ReadOnly), strings.Join(n.Covers, ", ")),
		"sandbox: a fresh /proc (Airlock's process is not in it), /dev with null, zero, full, random and urandom only (no tty), no capabilities, " + net,
	}
	if n.User {
		out = append(out, "sandbox: in a user namespace (Airlock is not root): the caller's uid and gid map to themselves")
	}
	return append(out, n.Notes...)
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func without(s []string, v string) []string {
	out := make([]string, 0, len(s))
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}
