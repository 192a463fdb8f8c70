package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/airlock-dev/airlock/internal/gctune"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/toolcall"
)

func init() {
	register(command{name: "call", summary: "run tool calls read from stdin; print results as JSON", run: runCall})
}

func runCall(args []string, s stdio) int {
	var cf commonFlags
	var tools bool
	fs := newFlagSet("call", "call [--config FILE] [--session ID] < calls.json", s)
	cf.register(fs)
	fs.BoolVar(&tools, "list-tools", false, "print the model-facing tool specs (OpenAI tools format) and exit")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	var calls []pipeline.Call
	if !tools {
		data, err := io.ReadAll(s.in)
		if err != nil {
			return fail(s, fmt.Errorf("stdin: %w", err))
		}
		if calls, err = parseCalls(data); err != nil {
			return fail(s, fmt.Errorf("stdin: %w", err))
		}
	}
	sess, _, closeAll, err := openSession(ctx, cf, s)
	if err != nil {
		return fail(s, err)
	}
	defer closeAll()
	enc := json.NewEncoder(s.out)
	enc.SetIndent("", "  ")
	if tools {
		_ = enc.Encode(sess.Engine().Registry().Specs())
		return 0
	}
	if len(calls) >= steadyBatch {
		defer gctune.ForBatch()()
	}
	rw := newResultWriter(s.out)
	sess.RunBatchFunc(ctx, calls, func(_ int, r pipeline.Result) { rw.write(&r) })
	if err := rw.close(); err != nil {
		return fail(s, fmt.Errorf("stdout: %w", err))
	}
	return 0
}

// steadyBatch is the size of batch from which `airlock call` closes the collector's start-up
// window before the batch runs and collects as gctune.ForBatch says: a batch allocates a few
// kilobytes a call, so below this it stays far under the window's limit and keeps the cycles
// the window saves; above, the window let the heap grow to its limit unchecked.
const steadyBatch = 256

// resultWriter writes a batch's results as one indented JSON array, as json.Encoder with an
// indent of two spaces would write the whole slice, but one result at a time as the batch
// releases it, flushed at once so that a reader sees each as it comes: neither the results
// nor their JSON are held until the last call is over (10,000 read_file results were ~30 MB
// of JSON, and the results themselves more). After a write fails it writes nothing more;
// the batch still runs to its end, as it did when results were written after it.
type resultWriter struct {
	bw  *bufio.Writer
	n   int
	err error
}

func newResultWriter(w io.Writer) *resultWriter {
	return &resultWriter{bw: bufio.NewWriterSize(w, 64<<10)}
}

func (w *resultWriter) write(r *pipeline.Result) {
	if w.err != nil {
		return
	}
	b, err := json.MarshalIndent(r, "  ", "  ")
	if err != nil {
		w.err = err
		return
	}
	sep := ",\n  "
	if w.n == 0 {
		sep = "[\n  "
	}
	w.n++
	_, _ = w.bw.WriteString(sep)
	_, _ = w.bw.Write(b)
	w.err = w.bw.Flush()
}

// close ends the array and reports the first error met.
func (w *resultWriter) close() error {
	if w.err != nil {
		return w.err
	}
	end := "\n]\n"
	if w.n == 0 {
		end = "[]\n"
	}
	_, _ = w.bw.WriteString(end)
	return w.bw.Flush()
}

// parseCalls reads one call, an array of calls, or an OpenAI assistant message with
// tool_calls, as every front end that takes JSON does.
func parseCalls(data []byte) ([]pipeline.Call, error) {
	calls, _, err := toolcall.Parse(data, toolcall.Options{})
	return calls, err
}
