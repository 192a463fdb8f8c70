package pipeline_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/tool"
)

type preparedKey struct{}

// preparingPolicy allows everything and records, per call, whether its Check saw the
// batch's prepared work.
type preparingPolicy struct {
	prepared [][]string // the call IDs of each Prepare
	saw      map[string]bool
}

func (p *preparingPolicy) Prepare(_ context.Context, reqs []*pipeline.Request) func(context.Context) context.Context {
	var ids []string
	for _, r := range reqs {
		ids = append(ids, r.Call.ID)
	}
	p.prepared = append(p.prepared, ids)
	return func(ctx context.Context) context.Context { return context.WithValue(ctx, preparedKey{}, true) }
}

func (p *preparingPolicy) Check(ctx context.Context, r *pipeline.Request) (pipeline.Verdict, error) {
	p.saw[r.Call.ID] = ctx.Value(preparedKey{}) != nil
	var paths []tool.ResolvedPath
	for _, ref := range r.PathRefs {
		paths = append(paths, tool.ResolvedPath{Arg: ref.Arg, Raw: ref.Path, Resolved: filepath.Join(r.Env.Describe().Workspace, ref.Path), Access: ref.Access})
	}
	return pipeline.Verdict{Decision: pipeline.Allow, Code: "allowed", DecidedBy: "policy:test", Paths: paths}, nil
}

// TestPreparedBatch: a batch's calls with paths are prepared together before they are
// decided, and each Check sees the prepared work until an approval waits for a person;
// the Checks after that do without it. A single call is not prepared.
func TestPreparedBatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pol := &preparingPolicy{saw: map[string]bool{}}
	approve := approvalFunc(func(_ context.Context, r *pipeline.Request) (pipeline.Verdict, error) {
		if r.Call.ID == "c-b" {
			r.OnWait()
		}
		return pipeline.Verdict{Decision: pipeline.Allow, Code: "approved", DecidedBy: "test"}, nil
	})
	unknown := pipeline.Call{ID: "c-x", Name: "no_such_tool"}
	res := f.run(t, func(o *pipeline.Options) { o.Policy, o.Approval = pol, approve }, touch("a"), unknown, touch("b"), touch("c"))
	for i, r := range res {
		if want := i != 1; (r.Status == pipeline.StatusOK) != want {
			t.Errorf("call %s: %s", r.CallID, r.Status)
		}
	}
	if len(pol.prepared) != 1 || len(pol.prepared[0]) != 3 {
		t.Fatalf("prepared %v, want the three touch calls once", pol.prepared)
	}
	want := map[string]bool{"c-a": true, "c-b": true, "c-c": false}
	for id, w := range want {
		if pol.saw[id] != w {
			t.Errorf("call %s: Check saw prepared work %v, want %v", id, pol.saw[id], w)
		}
	}

	f.run(t, func(o *pipeline.Options) { o.Policy, o.Approval = pol, approve }, touch("d"))
	if len(pol.prepared) != 1 || pol.saw["c-d"] {
		t.Errorf("a single call was prepared: %v, saw %v", pol.prepared, pol.saw["c-d"])
	}
}
