package session

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/tool"
)

func TestFileStorePersists(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(dir, "conv-1")
	if err != nil {
		t.Fatal(err)
	}
	s.AddDenial()
	s.SetFileHash("/w/a", "h1")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(dir, "conv-1")
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if h, ok := s2.FileHash("/w/a"); !ok || h != "h1" || s2.Denials() != 1 {
		t.Errorf("reloaded: %q %v %d", h, ok, s2.Denials())
	}
	held, err := Open(dir, "busy")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, "busy"); !errors.Is(err, ErrInUse) {
		t.Errorf("second open of a held session: %v, want ErrInUse", err)
	}
	_ = held.Close()
	for _, bad := range []string{"", "..", "a/b", "x y"} {
		if _, err := Open(dir, bad); err == nil {
			t.Errorf("id %q accepted", bad)
		}
	}
}

func TestStaleCheck(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	env, err := local.New(local.Config{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Close(context.Background()) })
	file := filepath.Join(ws, "f.txt")
	if err := os.WriteFile(file, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := &StaleCheck{Store: NewMemory(), Readers: []string{"read_file"}, Writers: []string{"write_file"}}
	req := func(name, args string) *pipeline.Request {
		return &pipeline.Request{Call: pipeline.Call{Name: name}, Args: json.RawMessage(args), Env: env,
			Paths: []tool.ResolvedPath{{Arg: "path", Resolved: file}}}
	}
	ctx := context.Background()
	// Never seen: not checked.
	if b, err := g.Before(ctx, req("write_file", `{}`)); b != nil || err != nil {
		t.Fatalf("unseen file blocked: %v %v", b, err)
	}
	g.After(ctx, req("read_file", `{}`), pipeline.Result{Status: pipeline.StatusOK})
	if b, _ := g.Before(ctx, req("write_file", `{}`)); b != nil {
		t.Fatalf("unchanged file blocked: %+v", b)
	}
	// Somebody else changes it.
	if err := os.WriteFile(file, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := g.Before(ctx, req("write_file", `{}`))
	if err != nil || b == nil || b.Code != CodeStaleFile || !b.Retryable {
		t.Fatalf("stale write not blocked: %+v %v", b, err)
	}
	if b, _ := g.Before(ctx, req("write_file", `{"force":true}`)); b != nil {
		t.Errorf("force did not override: %+v", b)
	}
	// A failed read records nothing; a successful one catches up.
	g.After(ctx, req("read_file", `{}`), pipeline.Result{Status: pipeline.StatusFailed})
	if b, _ := g.Before(ctx, req("write_file", `{}`)); b == nil {
		t.Error("failed read cleared the stale state")
	}
	g.After(ctx, req("read_file", `{}`), pipeline.Result{Status: pipeline.StatusOK})
	if b, _ := g.Before(ctx, req("write_file", `{}`)); b != nil {
		t.Errorf("re-read did not clear the stale state: %+v", b)
	}
	// A file that vanished is a change too.
	_ = os.Remove(file)
	if b, _ := g.Before(ctx, req("write_file", `{}`)); b == nil {
		t.Error("deleted file not seen as changed")
	}
}

// A read that reports the digest of what it read is recorded as it is, with no second read
// of the file (the environment here would fail one).
func TestStaleCheckTakesTheReadsOwnDigest(t *testing.T) {
	g := &StaleCheck{Store: NewMemory(), Readers: []string{"read_file"}, Writers: []string{"write_file"}}
	sum := strings.Repeat("ab", 32)
	req := &pipeline.Request{Call: pipeline.Call{Name: "read_file"}, Paths: []tool.ResolvedPath{{Arg: "path", Resolved: "/ws/a.txt"}}}
	g.After(context.Background(), req, pipeline.Result{Status: pipeline.StatusOK, Data: map[string]any{"sha256": sum}})
	if h, ok := g.Store.FileHash("/ws/a.txt"); !ok || h != sum {
		t.Fatalf("recorded %q %v, want %q", h, ok, sum)
	}
}

// TestCheckID: 1-128 letters, digits, '.', '_' or '-', and not "." or "..".
func TestCheckID(t *testing.T) {
	tests := []struct {
		id string
		ok bool
	}{
		{"a", true},
		{"build-1.2_x", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"", false},
		{".", false},
		{"..", false},
		{"a/b", false},
		{"a b", false},
		{"é", false},
	}
	for _, tc := range tests {
		if err := CheckID(tc.id); (err == nil) != tc.ok {
			t.Errorf("CheckID(%q) = %v, want ok %v", tc.id, err, tc.ok)
		}
	}
}
