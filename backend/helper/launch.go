package helper

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
)

// HelloTimeout bounds how long a helper that was just started has to answer.
const HelloTimeout = 15 * time.Second

// StderrCap is how much of what a helper prints on stderr is kept, for the error that says
// why it did not start or why it died.
const StderrCap = 16 << 10

// Launched is a helper whose hello arrived: its client, and what it has said on stderr.
type Launched struct {
	Client *Client
	Stderr *backend.CappedBuffer
}

// Launch connects a client to a helper just started on r (its stdout) and w (its stdin)
// and waits up to [HelloTimeout] for its hello. stderr must be the buffer the helper's
// stderr is copied to (from [NewStderr]); what it holds goes into the error when the helper
// does not start. On error the client is closed; the caller ends the process or stream.
func Launch(ctx context.Context, r io.Reader, w io.WriteCloser, stderr *backend.CappedBuffer, log hclog.Logger) (*Launched, error) {
	c := NewClient(r, w, ClientOptions{Logger: log})
	hctx, cancel := context.WithTimeout(ctx, HelloTimeout)
	defer cancel()
	if err := c.Ready(hctx); err != nil {
		_ = c.Close()
		return nil, StartError(err, stderr)
	}
	return &Launched{Client: c, Stderr: stderr}, nil
}

// NewStderr returns the buffer a helper's stderr goes to.
func NewStderr() *backend.CappedBuffer { return backend.NewCappedBuffer(StderrCap) }

// StartError says why a helper did not start: err, and what it printed on stderr.
func StartError(err error, stderr *backend.CappedBuffer) error {
	if stderr != nil {
		if msg := strings.TrimSpace(string(stderr.Bytes())); msg != "" {
			return fmt.Errorf("helper did not start: %w (stderr: %s)", err, msg)
		}
	}
	return fmt.Errorf("helper did not start: %w", err)
}

// MergeEnv returns base with over applied: a name set in both takes over's value, in
// base's position; names new in over follow in their order. Each name appears once.
func MergeEnv(base, over []string) []string {
	idx := map[string]int{}
	out := make([]string, 0, len(base)+len(over))
	for _, list := range [][]string{base, over} {
		for _, kv := range list {
			name, _, _ := strings.Cut(kv, "=")
			if i, ok := idx[name]; ok {
				out[i] = kv
				continue
			}
			idx[name] = len(out)
			out = append(out, kv)
		}
	}
	return out
}
