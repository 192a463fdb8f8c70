package shellrisk

import (
	"path"
	"strings"
)

// Context is what the classifier knows of where a command runs and what the policy
// around it says. The zero Context is the classifier's own view: relative paths are the
// workspace, every absolute path is outside it, and only the rules' secret names are
// secrets.
//
// It exists because a command can reach what the file tools are kept from: a shell write
// outside write_roots, a read of a name deny_names hides, a change to the configuration in
// use or to the ledger. With a Context the classifier judges those as the file tools would
// refuse them.
type Context struct {
	// Workspace is the absolute path of the workspace as the command sees it. An absolute
	// path under it is judged as the relative path it is.
	Workspace string
	// WriteRoots are the directories writes may go to, absolute or relative to the
	// workspace. Empty means the workspace. A shell write elsewhere in the workspace is
	// write_outside_roots; one under a root outside the workspace is a plain write.
	WriteRoots []string
	// ReadRoots are the directories reads may come from besides WriteRoots. They are
	// recorded for callers; the classifier judges reads only by whether they reach
	// secrets.
	ReadRoots []string
	// DenyNames are the policy's names no call may touch (".env", "*.pem", ".git/hooks"),
	// matched as the file tools match them: a read of one is credential_access.
	DenyNames []string
	// Protected are files no command may name or reach, absolute or relative to the
	// workspace: the configuration file in use and the ledger, whatever they are called.
	// Naming one, or deleting, writing or globbing a directory that holds one, is
	// airlock_state.
	Protected []string
	// HostAllowed, when set, says whether a network program may talk to a host named in
	// its arguments (a URL's host); a host it refuses is host_not_allowed. It is the seam
	// for the URL guard; nil means hosts are not judged here.
	HostAllowed func(host string) bool
	// Scratch are the directories, absolute as the command sees them, that only this
	// session's commands reach: the session's private temp dir, a container's own /tmp. A
	// write or delete in one is a plain write. Nothing else is scratch: the rest of /tmp
	// and /var/tmp is shared with every other project on the machine and is outside the
	// workspace like any other path.
	Scratch []string
	// Unconfined says nothing but this reading stands between a command and the machine:
	// no kernel sandbox, no container. A program the repository's own configuration names
	// for its paths (a git textconv, filter or merge driver an attribute selects) would then
	// run as the user, and git cannot switch those off by name, so a git command that may
	// run one is repo_program (exec). Where commands are confined the driver runs inside
	// the sandbox like any other command, and the reason is not given.
	Unconfined bool
	// SecretsHidden says that what runs the command keeps the deny_names files of the
	// workspace and the credential stores unreadable to it (the kernel sandbox, which finds
	// them when it starts and grants no read of them). A recursive read of the workspace
	// (grep -rn TODO ., grep -rl x) then cannot reach a secret and is judged by what else it
	// does; without it the workspace's .env is one of the files it reads, and the read is
	// credential_access. A read that names a secret (cat .env) is judged the same either way:
	// the classifier does not lean on the sandbox for what it can see.
	SecretsHidden bool
	// TMPDIR, when set, is the value commands get in $TMPDIR (the session's temp dir, one
	// of Scratch): a literal $TMPDIR or ${TMPDIR} in a command is that directory until the
	// command assigns or unsets it. Empty means $TMPDIR is only known at run time.
	TMPDIR string

	// protectedNames are the base names of Protected, set by normalised.
	protectedNames map[string]bool
}

// normalised cleans the context's paths once per classification.
func (cx Context) normalised() Context {
	if cx.Workspace != "" {
		cx.Workspace = cleanAbs(cx.Workspace)
	}
	clean := func(list []string) []string {
		out := make([]string, 0, len(list))
		for _, p := range list {
			if p == "" {
				continue
			}
			if strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") {
				out = append(out, cleanAbs(p))
			} else {
				out = append(out, path.Clean(p))
			}
		}
		return out
	}
	cx.WriteRoots = clean(cx.WriteRoots)
	cx.ReadRoots = clean(cx.ReadRoots)
	cx.Protected = clean(cx.Protected)
	scratch := make([]string, 0, len(cx.Scratch))
	for _, d := range cx.Scratch {
		// Only an absolute directory can be scratch; "/" would make everything scratch.
		if strings.HasPrefix(d, "/") && cleanAbs(d) != "/" {
			scratch = append(scratch, cleanAbs(d))
		}
	}
	cx.Scratch = scratch
	if !strings.HasPrefix(cx.TMPDIR, "/") {
		cx.TMPDIR = ""
	} else {
		cx.TMPDIR = cleanAbs(cx.TMPDIR)
	}
	for i, r := range cx.WriteRoots {
		if rel, ok := cx.inWorkspace(r); ok {
			cx.WriteRoots[i] = rel
		}
	}
	cx.protectedNames = map[string]bool{}
	for i, p := range cx.Protected {
		if rel, ok := cx.inWorkspace(p); ok {
			cx.Protected[i] = rel
		}
		if base := path.Base(p); strings.Contains(base, ".") {
			// Named anywhere, a file called like the configuration in use is taken for it; a
			// bare directory name (sessions) is too common to judge by name.
			cx.protectedNames[base] = true
		}
	}
	return cx
}

// inWorkspace returns the workspace-relative form of an absolute path inside the
// workspace.
func (cx Context) inWorkspace(c string) (string, bool) {
	ws := cx.Workspace
	if ws == "" || !strings.HasPrefix(c, "/") {
		return "", false
	}
	if c == ws {
		return ".", true
	}
	if rest, ok := strings.CutPrefix(c, strings.TrimSuffix(ws, "/")+"/"); ok {
		return path.Clean(rest), true
	}
	return "", false
}

// reachesProtected reports whether a path a command acts on is a protected file or lies in
// a protected directory, or, when the action is recursive or a glob, is a directory that
// holds one.
func (cx Context) reachesProtected(info pathInfo, wide bool) bool {
	if info.class == pathDynamic {
		return false
	}
	c := info.clean
	for _, p := range cx.Protected {
		if c == p || strings.HasPrefix(c, strings.TrimSuffix(p, "/")+"/") {
			// The file itself, or one inside a protected directory (the sessions, the
			// approvals store).
			return true
		}
		if wide && (c == "." && !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "..") ||
			strings.HasPrefix(p, strings.TrimSuffix(c, "/")+"/") || c == "/") {
			return true
		}
	}
	return false
}
