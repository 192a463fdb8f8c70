package backend

import (
	"fmt"
	"path"
	"strings"
)

// WorkDir joins dir with the workspace (both slash-separated, as the environment sees them)
// and returns the absolute, cleaned result. It refuses, with ErrOutsideWorkspace, any
// directory whose cleaned form is not the workspace or below it by path components: "..",
// "/etc", and "/work/app-copy" when the workspace is "/work/app". Symlinks are the
// backend's to resolve where the directory lives.
func WorkDir(workspace, dir string) (string, error) {
	ws := path.Clean(workspace)
	if !path.IsAbs(ws) {
		return "", fmt.Errorf("%w: workspace %q is not absolute", ErrInvalidRequest, workspace)
	}
	if strings.ContainsRune(dir, 0) {
		return "", fmt.Errorf("%w: working directory contains a NUL byte", ErrInvalidRequest)
	}
	var p string
	switch {
	case dir == "":
		return ws, nil
	case path.IsAbs(dir):
		p = path.Clean(dir)
	default:
		p = path.Join(ws, dir)
	}
	if !Within(ws, p) {
		return "", fmt.Errorf("%w: working directory %q is not inside %s", ErrOutsideWorkspace, dir, ws)
	}
	return p, nil
}

// Within reports whether p is root or lies below it, comparing whole path components of
// cleaned, slash-separated absolute paths. It is a pure string function: callers resolve
// symlinks first.
func Within(root, p string) bool {
	root, p = path.Clean(root), path.Clean(p)
	if root == "/" {
		return strings.HasPrefix(p, "/")
	}
	// As p == root || strings.HasPrefix(p, root+"/"), without building root+"/": the path
	// policy asks this many times for every call.
	return strings.HasPrefix(p, root) && (len(p) == len(root) || p[len(root)] == '/')
}
