package pathpolicy

import (
	"context"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/pipeline"
)

var _ pipeline.Preparer = (*Policy)(nil)

// prepareChunk bounds the paths of one resolve message when a batch is prepared.
const prepareChunk = 2048

// resolvedSet is what Prepare resolved for a batch: each path as the environment saw it
// then. Check takes its paths from here when all of them are here, and otherwise resolves
// them all afresh.
type resolvedSet struct {
	paths map[string]resolved
}

type resolvedKey struct{}

// Prepare resolves, ahead of the batch's Checks, every path they would resolve — the
// workspace, the roots and protected files once, and each call's paths — with one message
// to the environment per [prepareChunk] distinct paths instead of one per call. It decides
// nothing: each Check still makes every decision from these resolutions. The pipeline drops
// them once an approval of the batch waited for a person. When the resolution fails, nothing
// is prepared and each Check resolves for itself.
func (p *Policy) Prepare(ctx context.Context, reqs []*pipeline.Request) func(context.Context) context.Context {
	if len(reqs) == 0 || reqs[0].Env == nil {
		return nil
	}
	env := reqs[0].Env
	ws := env.Describe().Workspace
	seen := map[string]bool{}
	var all []string
	add := func(q string) {
		if !seen[q] {
			seen[q] = true
			all = append(all, q)
		}
	}
	for _, q := range p.fixedPaths(ws).all() {
		add(q)
	}
	// A pipeline's calls all run in its one environment, the one asked here.
	for _, req := range reqs {
		for _, ref := range req.PathRefs {
			if lex, err := Normalize(ws, ref.Path); err == nil {
				add(lex)
			}
		}
	}
	set := &resolvedSet{paths: make(map[string]resolved, len(all))}
	for len(all) > 0 {
		n := min(len(all), prepareChunk)
		rs, err := resolve(ctx, env, all[:n])
		if err != nil {
			return nil
		}
		for i, r := range rs {
			set.paths[all[i]] = r
		}
		all = all[n:]
	}
	return func(ctx context.Context) context.Context { return context.WithValue(ctx, resolvedKey{}, set) }
}

// resolveWith resolves paths inside env, taking them from what Prepare resolved for the
// batch (in the same environment: the pipeline's) when every one of them is there.
func resolveWith(ctx context.Context, env backend.Environment, paths []string) ([]resolved, error) {
	if set, ok := ctx.Value(resolvedKey{}).(*resolvedSet); ok {
		rs := make([]resolved, len(paths))
		hit := true
		for i, q := range paths {
			if rs[i], hit = set.paths[q]; !hit {
				break
			}
		}
		if hit {
			return rs, nil
		}
	}
	return resolve(ctx, env, paths)
}
