package pipeline

import (
	"context"
	"sync/atomic"
)

// Preparer is a Policy that can do ahead, for all the calls of a batch at once, work that
// its Check would otherwise do call by call: the path policy resolves every path of the
// batch with one message to the environment instead of one message per call. What Prepare
// returns adds its work to the context a Check of the batch runs under; Check must still
// decide each call in full, and do itself whatever was not prepared.
type Preparer interface {
	Prepare(ctx context.Context, reqs []*Request) (attach func(context.Context) context.Context)
}

// prepared is a Preparer's work for one batch. It is dropped once an approval of the batch
// waited for a person: what it saw of the environment may be old by then, and the later
// calls are checked afresh.
type prepared struct {
	attach  func(context.Context) context.Context
	dropped atomic.Bool
}

// prepare asks a Preparer policy to do ahead what the batch's Checks need. Calls that the
// registry or their tool's path extraction refuse are left out; decide refuses them as
// before. A single call has nothing to share and is not prepared.
func (p *Pipeline) prepare(ctx context.Context, calls []Call) *prepared {
	pr, ok := p.opts.Policy.(Preparer)
	if !ok || len(calls) < 2 || ctx.Err() != nil {
		return nil
	}
	reqs := make([]*Request, 0, len(calls))
	for _, c := range calls {
		t, ok := p.opts.Registry.Lookup(c.Name)
		if !ok || t.Paths == nil {
			continue
		}
		args := normalizeArgs(c.Arguments)
		refs, err := t.Paths(args)
		if err != nil || len(refs) == 0 {
			continue
		}
		reqs = append(reqs, &Request{Call: c, Tool: t, Args: args, PathRefs: refs, Env: p.opts.Env, SessionID: p.opts.SessionID})
	}
	if len(reqs) < 2 {
		return nil
	}
	attach := pr.Prepare(ctx, reqs)
	if attach == nil {
		return nil
	}
	return &prepared{attach: attach}
}

// with returns ctx carrying the batch's prepared work, while it holds.
func (b *prepared) with(ctx context.Context) context.Context {
	if b == nil || b.dropped.Load() {
		return ctx
	}
	return b.attach(ctx)
}

func (b *prepared) drop() {
	if b != nil {
		b.dropped.Store(true)
	}
}
