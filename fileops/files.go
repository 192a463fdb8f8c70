package fileops

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/tool"
)

// files is where the tools' bytes come from and go to: the host through an os.Root, or
// commands in the environment. Every path is absolute and already allowed by policy.
type files interface {
	// window returns the file's lines first..last (last 0: to the end), at most max+1
	// bytes of them, its line count and size, and whether its head holds a NUL byte (then
	// no lines).
	window(ctx context.Context, p string, first, last int, max int64) (window, error)
	// readAll returns the whole file; a file over max bytes is a too_large fsError.
	readAll(ctx context.Context, p string, max int64) ([]byte, error)
	// write replaces the file atomically, keeping its mode, creating missing parents. With
	// expect set (a patch), a file whose SHA-256 is no longer expect is refused as stale
	// where the road can tell.
	write(ctx context.Context, p string, data []byte, expect string) (created bool, err error)
	// notes say how the operations went where the model and the receipt should know: that
	// they ran as shell scripts, and why.
	notes() []string
}

type window struct {
	data   []byte
	total  int
	size   int64
	binary bool
	sha256 string // of the whole file, where the reader hashed it ("" otherwise)
}

// fsError is a failure the model can act on, with a code from pathpolicy or this package.
type fsError struct {
	code string
	msg  string
}

func (e *fsError) Error() string { return e.code + ": " + e.msg }

func fsErr(code, format string, a ...any) error {
	return &fsError{code: code, msg: fmt.Sprintf(format, a...)}
}

// permissionDenied says who was refused and how to fix it; who is "uid N (name)".
func permissionDenied(who string) error {
	if who == "" {
		who = "the environment's user"
	}
	return fsErr(CodePermissionDenied, "permission denied: %s may not do this here. Give that user access "+
		"(chown or chmod the directory), or, on Docker, let environment.docker.user = \"auto\" run commands as the workspace's owner", who)
}

func tooLarge(size, max int64) error {
	return fsErr(pathpolicy.CodeTooLarge, "the file is %d bytes, over the limit of %d", size, max)
}

// filesFor picks how to reach files in env: through its resident helper when it has one,
// directly for a host directory, and by shell commands only where neither is possible.
func filesFor(env backend.Environment) files {
	if fo, ok := env.(backend.FileOps); ok {
		return &helperFiles{fo: fo, ws: workspaceOf(env), shell: shellFiles{env: env}}
	}
	if h, ok := env.(backend.HostDir); ok && h.HostDir() != "" {
		return hostFiles{dir: h.HostDir()}
	}
	return shellFiles{env: env}
}

// withNotes adds the road's notes to an output.
func withNotes(out *tool.Output, err error, fs files) (*tool.Output, error) {
	if out != nil {
		out.Notes = append(out.Notes, fs.notes()...)
	}
	return out, err
}
