package tool

import (
	"context"
	"io"
)

// Stream carries live output destinations for a call that a person is watching (airlock
// exec). It travels in the context so that the road through the pipeline stays the same
// whether anyone watches or not.
type Stream struct {
	Stdout io.Writer
	Stderr io.Writer
}

type streamKey struct{}

// WithStream returns a context that asks handlers to copy output to s as it arrives.
func WithStream(ctx context.Context, s *Stream) context.Context {
	return context.WithValue(ctx, streamKey{}, s)
}

// StreamFrom returns the stream in ctx, or nil.
func StreamFrom(ctx context.Context) *Stream {
	s, _ := ctx.Value(streamKey{}).(*Stream)
	return s
}
