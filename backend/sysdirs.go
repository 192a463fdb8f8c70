package backend

import (
	"os"
	"path"
	"path/filepath"
	"strings"
)

// PathRule names a host path that commands must not be given as a workspace or a mount, nor
// any directory that contains it. With Subtree, everything below it is refused too; Base may
// be a glob, matching every entry of Dir whose name fits.
type PathRule struct {
	Dir, Base string
	Subtree   bool
	Why       string
}

// PathRules is a list of rules, checked in order.
type PathRules []PathRule

// SystemDirs are the host's system directories and home roots. The Docker backend refuses
// them as mounts and the local backend as a workspace, so that `--config /dev/null` (whose
// directory is /dev) or a workspace of "/" is a clear error rather than commands and file
// tools let loose on the host's own files.
var SystemDirs = PathRules{
	{"/", "etc", true, "is a system directory"},
	{"/", "proc", true, "is a kernel filesystem"},
	{"/", "sys", true, "is a kernel filesystem"},
	{"/", "dev", true, "is the host's devices"},
	{"/", "boot", true, "is a system directory"},
	{"/", "usr", false, "is a system directory"},
	{"/", "bin", false, "is a system directory"},
	{"/", "sbin", false, "is a system directory"},
	{"/", "lib", false, "is a system directory"},
	{"/", "lib32", false, "is a system directory"},
	{"/", "lib64", false, "is a system directory"},
	{"/", "libx32", false, "is a system directory"},
	{"/", "var", false, "is a system directory"},
	{"/", "run", false, "is a system directory"},
	{"/", "root", false, "is a home directory's root"},
	{"/home", "*", false, "is a home directory's root"},
}

// Refusal says why the absolute, cleaned, symlink-resolved path p is refused by the rules,
// or "" when it is not: because it is a ruled path, lies in a ruled subtree, or contains a
// ruled path (as / contains /etc).
func (rules PathRules) Refusal(p string) string {
	p = path.Clean(p)
	for _, f := range rules {
		if Within(p, f.Dir) {
			// p is f.Dir or one of its ancestors: handing it out exposes what f protects.
			return "contains " + path.Join(f.Dir, f.Base) + ", which " + f.Why
		}
		if !Within(f.Dir, p) {
			continue
		}
		rest := strings.TrimPrefix(strings.TrimPrefix(p, f.Dir), "/")
		first, _, deeper := strings.Cut(rest, "/")
		if ok, _ := path.Match(f.Base, first); ok && (!deeper || f.Subtree) {
			return f.Why
		}
	}
	return ""
}

// SystemDir says why p (absolute, cleaned, symlinks resolved) must not be a workspace or a
// mount, or "": the root, a system directory, a home directory's root, or a directory that
// holds Airlock's own user's home.
func SystemDir(p string) string {
	p = path.Clean(p)
	if p == "/" {
		return "is the host's root"
	}
	if why := SystemDirs.Refusal(p); why != "" {
		return why
	}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) && home != "/" && Within(p, filepath.Clean(home)) {
		return "is or contains the home directory " + home
	}
	return ""
}
