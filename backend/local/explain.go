package local

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/backend"
)

// refusals are the messages a command prints when the sandbox refused it something
// (EACCES, EPERM, EROFS as libc and common tools spell them).
var refusals = [][]byte{[]byte("Permission denied"), []byte("Read-only file system"), []byte("Operation not permitted")}

// guarded is one kind of path the helper keeps from commands, and what to tell the model
// when a command ran into one.
type guarded struct {
	paths []string
	rule  string
	what  string
}

// explain says, for a command that failed on a refusal, which rule refused it and what to
// do instead; "" when nothing points at the sandbox.
func (e *Env) explain(res backend.Result) string {
	if res.ExitCode == 0 || !containsAny(res.Stderr, refusals) {
		return ""
	}
	for _, g := range e.guards {
		for _, p := range g.paths {
			if mentions(res.Stderr, p, e.workspace) {
				return fmt.Sprintf("%s%s is %s: %s", backend.RefusedNote, p, g.rule, g.what)
			}
		}
	}
	if e.isolation == isolationNamespaces && bytes.Contains(res.Stderr, []byte("Read-only file system")) {
		return backend.RefusedNote + "outside the write roots (" + strings.Join(e.writeRoots, ", ") + ") and the session temp dir the host's files are read-only: write inside the workspace, or add the directory to the policy's write roots"
	}
	return ""
}

func containsAny(b []byte, subs [][]byte) bool {
	for _, s := range subs {
		if bytes.Contains(b, s) {
			return true
		}
	}
	return false
}

// mentions reports whether stderr names p, absolutely or relative to the workspace.
func mentions(stderr []byte, p, ws string) bool {
	if bytes.Contains(stderr, []byte(p)) {
		return true
	}
	if rel, err := filepath.Rel(ws, p); err == nil && !strings.HasPrefix(rel, "..") && rel != "." {
		return bytes.Contains(stderr, []byte(rel+":")) || bytes.Contains(stderr, []byte(rel+"'")) || bytes.Contains(stderr, []byte(rel+"/"))
	}
	return false
}
