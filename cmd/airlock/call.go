package main

import (
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
	if err := enc.Encode(results); err != nil {
		return fail(s, fmt.Errorf("stdout: %w", err))
	}
	return 0
}

// parseCalls reads one call, an array of calls, or an OpenAI assistant message with
// tool_calls, as every front end that takes JSON does.
func parseCalls(data []byte) ([]pipeline.Call, error) {
	calls, _, err := toolcall.Parse(data, toolcall.Options{})
	return calls, err
}
