package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/signal"
	"syscall"

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
	results := sess.RunBatch(ctx, calls)
	if err := writeResults(s.out, results); err != nil {
		return fail(s, fmt.Errorf("stdout: %w", err))
	}
	return 0
}

// writeResults writes results as one indented JSON array, as json.Encoder with an indent of
// two spaces would, but one result at a time, each let go once written: a batch of 10,000
// results encoded whole held a buffer of its ~30 MB of JSON, and every result, until the
// last byte was written.
func writeResults(w io.Writer, results []pipeline.Result) error {
	if len(results) == 0 {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if _, err := bw.WriteString("[\n  "); err != nil {
		return err
	}
	for i := range results {
		b, err := json.MarshalIndent(&results[i], "  ", "  ")
		if err != nil {
			return err
		}
		results[i] = pipeline.Result{}
		sep := ",\n  "
		if i == len(results)-1 {
			sep = "\n]\n"
		}
		if _, err := bw.Write(b); err != nil {
			return err
		}
		if _, err := bw.WriteString(sep); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// parseCalls reads one call, an array of calls, or an OpenAI assistant message with
// tool_calls, as every front end that takes JSON does.
func parseCalls(data []byte) ([]pipeline.Call, error) {
	calls, _, err := toolcall.Parse(data, toolcall.Options{})
	return calls, err
}
