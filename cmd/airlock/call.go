package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/airlock-dev/airlock/pipeline"
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

// wireCall accepts both Airlock's own form and an OpenAI tool call.
type wireCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	CallID    string          `json:"call_id"`
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Function  *struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// parseCalls reads one call, an array of calls, or an OpenAI assistant message with
// tool_calls. Arguments may be an object or, as OpenAI sends them, a JSON string.
func parseCalls(data []byte) ([]pipeline.Call, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, errors.New("empty: expected a tool call, an array of tool calls, or a message with tool_calls")
	}
	var raws []json.RawMessage
	switch data[0] {
	case '[':
		if err := json.Unmarshal(data, &raws); err != nil {
			return nil, fmt.Errorf("not a JSON array of tool calls: %w", err)
		}
	case '{':
		var msg struct {
			ToolCalls *[]json.RawMessage `json:"tool_calls"`
		}
		if err := json.Unmarshal(data, &msg); err != nil {
			return nil, fmt.Errorf("not a JSON object: %w", err)
		}
		if msg.ToolCalls != nil {
			raws = *msg.ToolCalls
		} else {
			raws = []json.RawMessage{data}
		}
	default:
		return nil, errors.New("expected a JSON object or array")
	}
	calls := make([]pipeline.Call, 0, len(raws))
	for i, raw := range raws {
		var w wireCall
		dec := json.NewDecoder(bytes.NewReader(raw))
		if err := dec.Decode(&w); err != nil {
			return nil, fmt.Errorf("call %d: not a tool call object: %w", i, err)
		}
		c := pipeline.Call{ID: w.CallID, Name: w.Name, Arguments: w.Arguments}
		if c.ID == "" {
			c.ID = w.ID
		}
		if w.Function != nil {
			c.Name, c.Arguments = w.Function.Name, w.Function.Arguments
		}
		calls = append(calls, c)
	}
	return calls, nil
}
