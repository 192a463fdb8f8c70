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
	return cx
}
