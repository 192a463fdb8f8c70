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
	// One JSON value, and nothing after it.
	dec := json.NewDecoder(bytes.NewReader(data))
	var value json.RawMessage
	if err := dec.Decode(&value); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", jsonError(data, err))
	}
	if end := int(dec.InputOffset()); end < len(data) { // data is trimmed: what follows is text
		rest := bytes.TrimLeft(data[end:], " \t\r\n")
		at := len(data) - len(rest)
		return nil, fmt.Errorf("a JSON %s followed by more text at byte %d (%q): send one object or one array", kindOf(value), at, rest[:min(len(rest), 20)])
	}
	var raws []json.RawMessage
	switch value[0] {
	case '[':
		if err := json.Unmarshal(value, &raws); err != nil {
			return nil, fmt.Errorf("not a JSON array of tool calls: %w", err)
		}
	case '{':
		var msg struct {
			ToolCalls *[]json.RawMessage `json:"tool_calls"`
		}
		if err := json.Unmarshal(value, &msg); err != nil {
			return nil, fmt.Errorf("tool_calls: expected an array of tool calls: %w", err)
		}
		if msg.ToolCalls != nil {
			raws = *msg.ToolCalls
		} else {
			raws = []json.RawMessage{value}
		}
	default:
		return nil, fmt.Errorf("a JSON %s: expected a tool call object, an array of them, or a message with tool_calls", kindOf(value))
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

// kindOf names the kind of a JSON value by its first byte.
func kindOf(v json.RawMessage) string {
	switch v[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// jsonError adds the line and column to a syntax error's byte offset.
func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return errors.New("the input ends in the middle of a value")
		}
		return err
	}
	// Offset counts the bytes read, the offending one included.
	at := max(min(int(se.Offset), len(data))-1, 0)
	line := 1 + bytes.Count(data[:at], []byte("\n"))
	col := at - bytes.LastIndexByte(data[:at], '\n')
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}
