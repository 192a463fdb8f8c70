package fileopstest

import (
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/backend/backendtest"
	"github.com/airlock-dev/airlock/fileops"
)

// testPermissionDenied: where the environment's user may not write or read, the tools say
// permission_denied, name the user and say how to fix it — not "a parent of this path is a
// file" or "mktemp: (null)". Skipped where commands run as root, whom modes do not stop.
func testPermissionDenied(t *testing.T, h *harness) {
	if strings.TrimSpace(backendtest.MustSh(t, h.env, "id -u")) == "0" {
		t.Skip("commands run as root here: file modes do not refuse them")
	}
	backendtest.MustSh(t, h.env, "cd "+h.scratch+"/ws && mkdir locked && echo secret > locked/mine.txt && echo x > closed.txt && chmod 000 closed.txt && chmod 555 locked")
	t.Cleanup(func() {
		backendtest.Sh(t, h.env, "chmod 755 "+h.scratch+"/ws/locked; chmod 644 "+h.scratch+"/ws/closed.txt")
	})
	for _, r := range []result{
		write(h, h.ws("locked/new.txt"), "x"),
		write(h, h.ws("locked/sub/new.txt"), "x"), // a parent to create
		h.call(fileops.Patch, args{"path": h.ws("locked/mine.txt"), "old_string": "secret", "new_string": "public"}),
		read(h, h.ws("closed.txt")),
	} {
		out := h.wantFailed(r, fileops.CodePermissionDenied)
		if !strings.Contains(out.ErrorMessage, "uid ") || !strings.Contains(out.ErrorMessage, "chown or chmod") || out.Retryable {
			t.Errorf("message %q (retryable %v): want the user, how to fix it, and not retryable", out.ErrorMessage, out.Retryable)
		}
	}
	if h.exists("ws/locked/new.txt") || h.exists("ws/locked/sub") {
		t.Error("a refused write left something behind")
	}
	if got := backendtest.MustSh(t, h.env, "cat "+h.scratch+"/ws/locked/mine.txt"); got != "secret\n" {
		t.Errorf("a refused patch changed the file: %q", got)
	}
}
