package pathpolicy_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/tool"
)

// countingEnv counts the resolve messages sent to the helper.
type countingEnv struct {
	*local.Env
	resolves atomic.Int64
}

func (c *countingEnv) ResolvePaths(ctx context.Context, paths []string) ([]backend.ResolvedPath, error) {
	c.resolves.Add(1)
	return c.Env.ResolvePaths(ctx, paths)
}

// TestPrepareGivesTheSameVerdicts: a batch prepared ahead gets, call by call, exactly the
// verdicts and resolved paths that Check gives each call alone, with one resolve message for
// the whole batch instead of one per call; a path that was not prepared is resolved afresh.
func TestPrepareGivesTheSameVerdicts(t *testing.T) {
	t.Parallel()
	local, ws := world(t)
	env := &countingEnv{Env: local}
	pol, err := pathpolicy.New(pathpolicy.Config{MaxReadBytes: 1000, MaxWriteBytes: 10},
		pathpolicy.WithProtectedFiles(".airlock/receipts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	rd := func(p string) tool.PathRef { return tool.PathRef{Arg: "path", Path: p, Access: tool.Read} }
	wr := func(p string) tool.PathRef { return tool.PathRef{Arg: "path", Path: p, Access: tool.Write} }
	var reqs []*pipeline.Request
	for _, ref := range []tool.PathRef{rd("src/a.go"), rd("src/nope.go"), wr("alias/new.go"), rd("out/s.txt"),
		rd("../outside/s.txt"), rd("loop"), rd("a\x00"), rd("src/.env"), wr(".airlock/receipts.jsonl"), rd("big.txt"), rd("src/a.go")} {
		name, args := "read_file", map[string]any{}
		if ref.Access == tool.Write {
			name, args = "write_file", map[string]any{"content": "x"}
		}
		r := request(local, name, args, ref)
		r.Env = env
		reqs = append(reqs, r)
	}
	ctx := context.Background()
	alone := make([]pipeline.Verdict, len(reqs))
	for i, r := range reqs {
		if alone[i], err = pol.Check(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	env.resolves.Store(0)
	attach := pol.Prepare(ctx, reqs)
	if attach == nil {
		t.Fatal("nothing prepared")
	}
	for i, r := range reqs {
		v, err := pol.Check(attach(ctx), r)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(v, alone[i]) {
			t.Errorf("%s: prepared verdict %+v, alone %+v", r.PathRefs[0].Path, v, alone[i])
		}
	}
	if n := env.resolves.Load(); n != 1 {
		t.Errorf("%d resolve messages for the prepared batch, want 1", n)
	}

	// A path the batch did not name is resolved when it is checked, as it is now.
	if err := os.Symlink("../outside", filepath.Join(ws, "later")); err != nil {
		t.Fatal(err)
	}
	r := request(local, "read_file", map[string]any{}, rd("later/s.txt"))
	r.Env = env
	v, err := pol.Check(attach(ctx), r)
	if err != nil {
		t.Fatal(err)
	}
	if v.Code != pathpolicy.CodeSymlinkEscape || env.resolves.Load() != 2 {
		t.Errorf("unprepared path: verdict %+v after %d resolves, want symlink_escape after 2", v, env.resolves.Load())
	}
}
