package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/tool"
)

// keepaliveEvery is the longest silence on an event stream: proxies and clients that time
// out an idle connection see a comment line at least this often.
const keepaliveEvery = 10 * time.Second

// wantsEvents says whether the request asked for an event stream.
func wantsEvents(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/event-stream" {
				return true
			}
		}
	}
	return false
}

// events writes server-sent events, one at a time, each flushed.
type events struct {
	mu sync.Mutex
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (e *events) send(name string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, data)
	_ = e.rc.Flush()
}

func (e *events) comment(text string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fmt.Fprintf(e.w, ": %s\n\n", text)
	_ = e.rc.Flush()
}

// OutputEvent is a chunk of a command's output as it arrives, stdout and stderr together in
// the order they came (a command that may turn into a background job is watched as one
// stream): Offset is the byte offset of Data in it. CallID is set when the batch has one
// call (a batch's calls share the stream).
type OutputEvent struct {
	CallID string `json:"call_id,omitempty"`
	Offset int64  `json:"offset"`
	Data   string `json:"data"`
}

// outputWriter turns writes into output events, up to max bytes.
type outputWriter struct {
	ev     *events
	callID string
	max    int64
	mu     sync.Mutex
	n      int64
}

func (o *outputWriter) Write(b []byte) (int, error) {
	o.mu.Lock()
	off := o.n
	o.n += int64(len(b))
	keep := b
	if over := off + int64(len(b)) - o.max; over > 0 {
		keep = b[:max(int64(len(b))-over, 0)]
	}
	o.mu.Unlock()
	if len(keep) > 0 {
		o.ev.send("output", OutputEvent{CallID: o.callID, Offset: off, Data: string(keep)})
	}
	return len(b), nil
}

// streamCalls runs calls and answers as events, in order: queued, output chunks as they
// arrive (keepalive comments in silences), then per call its result and its receipt, then
// end.
func (s *Server) streamCalls(w http.ResponseWriter, r *http.Request, e *entry, calls []pipeline.Call) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	ev := &events{w: w, rc: http.NewResponseController(w)}
	ids := make([]string, len(calls))
	for i, c := range calls {
		if c.ID == "" {
			calls[i].ID = pipeline.GenerateCallID(c, i)
		}
		ids[i] = calls[i].ID
	}
	ev.send("queued", map[string]any{"call_ids": ids})
	one := ""
	if len(calls) == 1 {
		one = ids[0]
	}
	limit := s.opts.Engine.Config().Environment.MaxOutputBytes
	out := &outputWriter{ev: ev, callID: one, max: limit}
	ctx := tool.WithStream(r.Context(), &tool.Stream{Stdout: out, Stderr: out})
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		t := time.NewTicker(keepaliveEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				ev.comment("keepalive")
			}
		}
	}()
	cs := &callerSession{Session: e.sess, caller: Caller(r.Context()), s: s, e: e}
	results := cs.RunBatch(ctx, calls)
	stop()
	for _, res := range results {
		rec := res.Receipt
		res.Receipt = nil
		ev.send("result", res)
		ev.send("receipt", rec)
	}
	ev.send("end", map[string]any{"count": len(results)})
}
