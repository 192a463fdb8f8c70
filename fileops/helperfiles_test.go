package fileops_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/helper"
	"github.com/airlock-dev/airlock/fileops"
	"github.com/airlock-dev/airlock/fileops/fileopstest"
	"github.com/airlock-dev/airlock/tool"
)

// withHelper is the local backend seen as a remote one whose resident helper serves file
// operations: an in-process `airlock helper` on a pipe. It counts the operations served.
type withHelper struct {
	remoteLike
	c   *helper.Client
	ops *int
}

func (w withHelper) FileOp(ctx context.Context, req backend.FileRequest) (backend.FileResult, error) {
	*w.ops++
	return w.c.FileOp(ctx, req)
}

func newHelperEnv(t *testing.T) withHelper {
	t.Helper()
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	go func() { _ = helper.Serve(context.Background(), sr, sw, helper.ServeOptions{}); _ = sw.Close() }()
	c := helper.NewClient(cr, cw, helper.ClientOptions{})
	t.Cleanup(func() { _ = c.Close() })
	return withHelper{remoteLike: remoteLike{newLocal(t)}, c: c, ops: new(int)}
}

// TestLocalHelperRoad runs the suite with the file operations served by the helper.
func TestLocalHelperRoad(t *testing.T) {
	fileopstest.Run(t, func(t *testing.T) backend.Environment { return newHelperEnv(t) })
}

// noHelper is an environment whose helper is not running: FileOp says so.
type noHelper struct{ remoteLike }

func (noHelper) FileOp(context.Context, backend.FileRequest) (backend.FileResult, error) {
	return backend.FileResult{}, fmt.Errorf("test: %w: the helper is off", backend.ErrNoHelper)
}

// TestRoadNotes: the helper road is taken when it is offered, and the shell road, where no
// helper serves, says so in the result's notes.
func TestRoadNotes(t *testing.T) {
	reg := tool.NewRegistry()
	if err := fileops.Register(reg, fileops.Options{}); err != nil {
		t.Fatal(err)
	}
	run := func(env backend.Environment, name string, args map[string]any) *tool.Output {
		t.Helper()
		ws := env.Describe().Workspace
		raw, _ := json.Marshal(args)
		tl, _ := reg.Lookup(name)
		inv := &tool.Invocation{CallID: "c", Args: raw, Env: env, Paths: map[string]tool.ResolvedPath{
			"path": {Arg: "path", Raw: "f.txt", Resolved: filepath.Join(ws, "f.txt"), Access: tool.Read, Exists: true},
		}}
		out, err := tl.Handler(context.Background(), inv)
		if err != nil || out.Status != tool.StatusOK {
			t.Fatalf("%s: %v %+v", name, err, out)
		}
		return out
	}
	h := newHelperEnv(t)
	if err := os.WriteFile(filepath.Join(h.Describe().Workspace, "f.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name          string
		args, another map[string]any
	}{
		{fileops.ReadFile, map[string]any{"path": "f.txt"}, map[string]any{"path": "f.txt"}},
		{fileops.Patch, map[string]any{"path": "f.txt", "old_string": "one", "new_string": "two"},
			map[string]any{"path": "f.txt", "old_string": "two", "new_string": "one"}},
		{fileops.WriteFile, map[string]any{"path": "f.txt", "content": "three\n"}, map[string]any{"path": "f.txt", "content": "four\n"}},
	} {
		before := *h.ops
		if out := run(h, c.name, c.args); len(out.Notes) != 0 || *h.ops == before {
			t.Errorf("%s on the helper road: %d operations, notes %q", c.name, *h.ops-before, out.Notes)
		}
		out := run(noHelper{h.remoteLike}, c.name, c.another)
		if len(out.Notes) != 1 || !strings.Contains(out.Notes[0], "shell script") || !strings.Contains(out.Notes[0], "the helper is off") {
			t.Errorf("%s on the shell road: notes %q", c.name, out.Notes)
		}
	}
}
