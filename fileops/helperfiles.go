package fileops

import (
	"context"
	"errors"
	"path"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/session"
)

// shellRoadNote is what a result says when its file operation ran as a shell script.
const shellRoadNote = "file tool ran as a shell script in the environment, not in a resident helper: " +
	"the script re-checks the path where it runs and reads through one open descriptor, but it has no openat2 and writes by name"

// helperFiles reaches files through the environment's resident helper ([backend.FileOps]),
// which opens each path by descriptor beneath the workspace (or "/"), refusing every
// symbolic link, and checks and uses the same open file. When no helper serves the
// environment right now it takes the shell road and records why, for the result's notes.
type helperFiles struct {
	fo    backend.FileOps
	ws    string
	shell shellFiles
	fell  []string // notes, once an operation fell back to the shell road
}

func (h *helperFiles) root(p string) string {
	if h.ws != "" && h.ws != p && backend.Within(h.ws, p) {
		return h.ws
	}
	return "/"
}

// op runs req in the helper; ok is false when the caller must take the shell road.
func (h *helperFiles) op(ctx context.Context, req backend.FileRequest) (backend.FileResult, bool, error) {
	req.Root = h.root(req.Path)
	res, err := h.fo.FileOp(ctx, req)
	if errors.Is(err, backend.ErrNoHelper) {
		if h.fell == nil {
			h.fell = []string{shellRoadNote + " (" + err.Error() + ")"}
		}
		return res, false, nil
	}
	return res, true, helperErr(err)
}

func (h *helperFiles) window(ctx context.Context, p string, first, last int, max int64) (window, error) {
	res, ok, err := h.op(ctx, backend.FileRequest{Op: backend.FileWindow, Path: p, First: first, Last: last, MaxBytes: max})
	if !ok {
		return h.shell.window(ctx, p, first, last, max)
	}
	if err != nil {
		return window{}, err
	}
	return window{data: res.Data, total: res.Lines, size: res.Size, binary: res.Binary, sha256: res.SHA256}, nil
}

func (h *helperFiles) readAll(ctx context.Context, p string, max int64) ([]byte, error) {
	res, ok, err := h.op(ctx, backend.FileRequest{Op: backend.FileRead, Path: p, MaxBytes: max})
	if !ok {
		return h.shell.readAll(ctx, p, max)
	}
	return res.Data, err
}

func (h *helperFiles) write(ctx context.Context, p string, data []byte, expect string) (bool, error) {
	res, ok, err := h.op(ctx, backend.FileRequest{Op: backend.FileWrite, Path: p, Data: data, MaxBytes: int64(len(data)), ExpectSHA256: expect})
	if !ok {
		return h.shell.write(ctx, p, data, expect)
	}
	return res.Created, err
}

func (h *helperFiles) notes() []string { return h.fell }

// helperErr maps the helper's codes to the ones the model sees.
func helperErr(err error) error {
	var fe *backend.FileError
	if err == nil || !errors.As(err, &fe) {
		return err
	}
	code := CodeIOError
	switch fe.Code {
	case backend.FileNotFound:
		code = pathpolicy.CodeNotFound
	case backend.FileSymlink:
		code = pathpolicy.CodeSymlinkEscape
	case backend.FileNotRegular:
		code = CodeNotRegular
	case backend.FileNotDir:
		code = CodeNotDirectory
	case backend.FileHardLink:
		code = pathpolicy.CodeForbiddenPath
	case backend.FileTooLarge:
		code = pathpolicy.CodeTooLarge
	case backend.FileStale:
		code = session.CodeStaleFile
	case backend.FilePermission:
		return permissionDenied(fe.Msg)
	}
	return &fsError{code: code, msg: fe.Msg}
}

// workspaceOf is the environment's workspace, clean, for choosing the root a path is opened
// beneath.
func workspaceOf(env backend.Environment) string {
	ws := env.Describe().Workspace
	if !path.IsAbs(ws) {
		return ""
	}
	return path.Clean(ws)
}
