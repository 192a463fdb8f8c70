package backend

import "context"

type callKey struct{}

// WithCall returns a context naming the tool call a command runs for. The pipeline sets it
// before a handler runs; a backend that routes commands through Airlock's egress proxy uses
// it to give each command proxy credentials naming its call, so that a refused connection
// lands on that call's receipt.
func WithCall(ctx context.Context, callID string) context.Context {
	return context.WithValue(ctx, callKey{}, callID)
}

// CallFrom returns the call id in ctx, or "".
func CallFrom(ctx context.Context) string {
	id, _ := ctx.Value(callKey{}).(string)
	return id
}
