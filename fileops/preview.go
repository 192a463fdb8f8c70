package fileops

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/tool"
)

// The previews a person approves a write by. They take the handler's own road — the path
// policy resolved, the file opened as the handler opens it (by descriptor on the host,
// through the resident helper elsewhere) — and compute the new content exactly as the
// handler will, so that the diff a person approves is the diff the model is shown after.
// Nothing is cut: a large file's change is shown as a change, and every replacement of a
// patch with replace_all is in the diff.

// writeSubject is what a person approves of write_file: the path and the content (in the
// preview's diff). An approval for the session covers the same content to the same path.
func writeSubject(raw json.RawMessage) (tool.Subject, error) {
	var a struct {
		Path    string `json:"path"`
		Content string `json:"content"`
		Force   bool   `json:"force"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return tool.Subject{}, fmt.Errorf("fileops: arguments: %w", err)
	}
	sum := sha256.Sum256([]byte(a.Content))
	s := tool.Subject{
		Fields: []tool.Field{{Name: "path", Value: a.Path},
			{Name: "content", Value: fmt.Sprintf("%d bytes, sha256 %s (the diff below shows them)", len(a.Content), hex.EncodeToString(sum[:]))}},
		Key:     tool.ArgumentsKey(raw),
		Session: "this exact write again: the same content to the same path; any other content, or another path, asks again",
	}
	if a.Force {
		s.Fields = append(s.Fields, tool.Field{Name: "force", Value: "true (written even if the file changed since it was read)"})
	}
	return s, nil
}

// patchSubject is what a person approves of patch: the file and whether every occurrence
// is replaced (the preview's diff shows each one).
func patchSubject(raw json.RawMessage) (tool.Subject, error) {
	var a struct {
		Path       string `json:"path"`
		ReplaceAll bool   `json:"replace_all"`
		Force      bool   `json:"force"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return tool.Subject{}, fmt.Errorf("fileops: arguments: %w", err)
	}
	s := tool.Subject{
		Fields:  []tool.Field{{Name: "path", Value: a.Path}, {Name: "replace_all", Value: fmt.Sprint(a.ReplaceAll)}},
		Key:     tool.ArgumentsKey(raw),
		Session: "this exact patch again: the same old and new text in the same file; any other change asks again",
	}
	if a.Force {
		s.Fields = append(s.Fields, tool.Field{Name: "force", Value: "true (patched even if the file changed since it was read)"})
	}
	return s, nil
}

// previewWrite is the diff write_file will make.
func previewWrite(ctx context.Context, inv *tool.Invocation, opts Options) (string, error) {
	p, shown, err := target(inv)
	if err != nil {
		return "", err
	}
	var a writeArgs
	if err := json.Unmarshal(inv.Args, &a); err != nil {
		return "", fmt.Errorf("fileops: arguments: %w", err)
	}
	old, exists, note, err := previewRead(ctx, inv, p, opts)
	if err != nil {
		return "", err
	}
	switch {
	case note != "":
		return note + "\n" + fullContent(shown, a.Content), nil
	case !exists:
		return "creates " + shown + "\n" + diffOf(shown, "", a.Content), nil
	}
	return diffOf(shown, string(old), a.Content), nil
}

// previewPatch is the diff patch will make: every occurrence when replace_all is set, and
// what the handler will answer instead when the patch cannot apply.
func previewPatch(ctx context.Context, inv *tool.Invocation, opts Options) (string, error) {
	p, shown, err := target(inv)
	if err != nil {
		return "", err
	}
	var a patchArgs
	if err := json.Unmarshal(inv.Args, &a); err != nil {
		return "", fmt.Errorf("fileops: arguments: %w", err)
	}
	old, exists, note, err := previewRead(ctx, inv, p, opts)
	switch {
	case err != nil:
		return "", err
	case note != "":
		return note + "; the patch will fail on it", nil
	case !exists:
		return shown + " does not exist: the patch will fail with not_found", nil
	}
	n := strings.Count(string(old), a.OldString)
	switch {
	case a.OldString == "" || n == 0:
		return "old_string does not occur in " + shown + ": the patch will fail with no_match and change nothing", nil
	case n > 1 && !a.ReplaceAll:
		return fmt.Sprintf("old_string occurs %d times in %s and replace_all is not set: the patch will fail with multiple_matches and change nothing", n, shown), nil
	}
	repl := strings.Replace(string(old), a.OldString, a.NewString, -1)
	return fmt.Sprintf("%d replacement(s)\n%s", n, diffOf(shown, string(old), repl)), nil
}

// previewRead reads the file a write replaces through the handler's road. A file too large
// or not a text file is not compared: note says so, in place of the diff's old side.
func previewRead(ctx context.Context, inv *tool.Invocation, p string, opts Options) (old []byte, exists bool, note string, err error) {
	fs := filesFor(inv.Env)
	old, err = fs.readAll(ctx, p, opts.MaxReadBytes)
	var fe *fsError
	switch {
	case err == nil:
		if bytes.IndexByte(old, 0) >= 0 {
			sum := sha256.Sum256(old)
			return nil, true, fmt.Sprintf("the current file is binary (%d bytes, sha256 %s): it is replaced whole", len(old), hex.EncodeToString(sum[:])), nil
		}
		return old, true, "", nil
	case errors.As(err, &fe) && fe.code == pathpolicy.CodeNotFound:
		return nil, false, "", nil
	case errors.As(err, &fe) && fe.code == pathpolicy.CodeTooLarge:
		return nil, true, "the current file is larger than the read limit (" + fe.msg + "): it is replaced whole and its old content is not shown", nil
	}
	return nil, false, "", fmt.Errorf("fileops: preview: %w", err)
}

// diffOf is the unified diff old → new, as the model is shown it after a patch.
func diffOf(shown, old, new string) string {
	if old == new {
		return "no change: the content is the same as the file's"
	}
	return unified(shown, lineDiff(splitLines(old), splitLines(new)))
}

// fullContent shows the new content whole, as added lines.
func fullContent(shown, content string) string {
	return unified(shown, lineDiff(nil, splitLines(content)))
}
