package approval

import (
	"context"
	"time"

	"github.com/airlock-dev/airlock/approval/pending"
)

// Asker is one way a front end can put an open approval to a person while the call waits:
// the MCP server's elicitation. The runtime writes the question to the approvals store
// first and watches the store while the asker asks, so that an answer from `airlock
// approvals` in another terminal counts as much as the asker's. Ask returns the person's
// answer, or false when there was none (the client cannot ask, the person cancelled, the
// front end asks on its own turn). Ask must return once ctx ends.
type Asker interface {
	Ask(ctx context.Context, rec pending.Record) (Answer, bool)
}

type askerKey struct{}

type asking struct {
	asker Asker
	wait  time.Duration
}

// WithAsker returns ctx carrying the front end's way to ask for the calls run with it, and
// how long a call may wait for its answer (the client's tool timeout bounds it) before it
// comes back approval_pending.
func WithAsker(ctx context.Context, a Asker, wait time.Duration) context.Context {
	return context.WithValue(ctx, askerKey{}, asking{asker: a, wait: wait})
}

// AskerFrom returns the asker ctx carries and its wait, or nil.
func AskerFrom(ctx context.Context) (Asker, time.Duration) {
	a, _ := ctx.Value(askerKey{}).(asking)
	return a.asker, a.wait
}
