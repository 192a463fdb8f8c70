package toolcall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/airlock-dev/airlock/pipeline"
)

// Form is the shape the calls came in; the answer takes the same shape.
type Form int

// Forms.
const (
	// One is a single call object.
	One Form = iota
	// Array is a JSON array of calls.
	Array
	// Message is an OpenAI assistant message with tool_calls.
	Message
)

// Error codes of [Error].
const (
	CodeInvalidJSON  = "invalid_json"
	CodeUnknownField = "unknown_field"
	CodeInvalidCalls = "invalid_calls"
)

// Error is input that is not calls: Code is one of the Code constants, the message names
// the offending call, field or byte.
type Error struct {
	Code string
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func fail(code, format string, args ...any) error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// Options adjust [Parse].
type Options struct {
	// DisallowUnknownFields refuses a call object, or a message, with a field this package
	// does not know, naming it. An OpenAI assistant message's own fields (role, content,
	// refusal, annotations, audio, name) are known.
	DisallowUnknownFields bool
}

// messageFields are the fields of an OpenAI chat assistant message.
var messageFields = map[string]bool{
	"role": true, "content": true, "tool_calls": true, "refusal": true, "annotations": true,
	"audio": true, "name": true, "function_call": true,
}

// callFields are the fields of a call in any accepted form.
var callFields = map[string]bool{
	"name": true, "arguments": true, "call_id": true, "id": true, "type": true, "function": true,
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

// Parse reads one call, an array of calls, or an OpenAI assistant message with tool_calls.
// Arguments may be an object or, as OpenAI sends them, a JSON string. Errors are [*Error].
func Parse(data []byte, opts Options) ([]pipeline.Call, Form, error) {
	data = bytes.TrimSpace(data)
	if c, ok := parseOne(data, opts); ok {
		return []pipeline.Call{c}, One, nil
	}
	return parse(data, opts)
}

// oneCall is a call object, and what would make it a message instead.
type oneCall struct {
	wireCall
	ToolCalls json.RawMessage `json:"tool_calls"`
}

// parseOne reads the commonest request, one well-formed call object, in one pass of the
// decoder, where parse takes four. It answers only when parse would
// answer the same call; anything else (not one valid JSON object, tool_calls present, a
// value of the wrong type, a key it would refuse or that holds an escape) it leaves to parse,
// which also words the error. FuzzParseOne holds the two to the same answers.
func parseOne(data []byte, opts Options) (pipeline.Call, bool) {
	if len(data) == 0 || data[0] != '{' {
		return pipeline.Call{}, false
	}
	// Unmarshal checks that the whole input is valid JSON before it decodes any of it.
	var w oneCall
	if json.Unmarshal(data, &w) != nil || w.ToolCalls != nil {
		return pipeline.Call{}, false
	}
	if opts.DisallowUnknownFields && !keysKnown(data, callFields) {
		return pipeline.Call{}, false
	}
	return w.call(), true
}

// keysKnown reports whether every key of obj, a valid JSON object, is one of known and
// written without an escape.
func keysKnown(obj []byte, known map[string]bool) bool {
	depth, key := 0, false // key: the next string at depth 1 is a key
	for i := 0; i < len(obj); i++ {
		switch c := obj[i]; c {
		case '{', '[':
			depth++
			key = depth == 1 && c == '{'
		case '}', ']':
			depth--
		case ',':
			key = depth == 1
		case '"':
			j := i + 1
			for ; obj[j] != '"'; j++ {
				if obj[j] == '\\' {
					if key {
						return false
					}
					j++ // the escaped byte: a quote there does not end the string
				}
			}
			if key && !known[string(obj[i+1:j])] {
				return false
			}
			key, i = false, j
		}
	}
	return true
}

// parse is Parse for any input.
func parse(data []byte, opts Options) ([]pipeline.Call, Form, error) {
	if len(data) == 0 {
		return nil, One, fail(CodeInvalidCalls, "empty: expected a tool call, an array of tool calls, or a message with tool_calls")
	}
	// One JSON value, and nothing after it.
	dec := json.NewDecoder(bytes.NewReader(data))
	var value json.RawMessage
	if err := dec.Decode(&value); err != nil {
		return nil, One, &Error{Code: CodeInvalidJSON, Err: fmt.Errorf("not valid JSON: %w", jsonError(data, err))}
	}
	if end := int(dec.InputOffset()); end < len(data) { // data is trimmed: what follows is text
		rest := bytes.TrimLeft(data[end:], " \t\r\n")
		at := len(data) - len(rest)
		return nil, One, fail(CodeInvalidJSON, "a JSON %s followed by more text at byte %d (%q): send one object or one array", kindOf(value), at, rest[:min(len(rest), 20)])
	}
	raws, form, err := split(value, opts)
	if err != nil {
		return nil, form, err
	}
	calls := make([]pipeline.Call, 0, len(raws))
	for i, raw := range raws {
		c, err := decodeCall(raw, opts)
		if err != nil {
			return nil, form, &Error{Code: codeOf(err), Err: fmt.Errorf("call %d: %w", i, err)}
		}
		calls = append(calls, c)
	}
	return calls, form, nil
}

// split finds the call objects in value.
func split(value json.RawMessage, opts Options) ([]json.RawMessage, Form, error) {
	var raws []json.RawMessage
	switch value[0] {
	case '[':
		if err := json.Unmarshal(value, &raws); err != nil {
			return nil, Array, fail(CodeInvalidCalls, "not a JSON array of tool calls: %w", err)
		}
		return raws, Array, nil
	case '{':
		var msg struct {
			ToolCalls *[]json.RawMessage `json:"tool_calls"`
		}
		if err := json.Unmarshal(value, &msg); err != nil {
			return nil, Message, fail(CodeInvalidCalls, "tool_calls: expected an array of tool calls: %w", err)
		}
		if msg.ToolCalls == nil {
			return []json.RawMessage{value}, One, nil
		}
		if opts.DisallowUnknownFields {
			if err := onlyFields(value, messageFields); err != nil {
				return nil, Message, &Error{Code: CodeUnknownField, Err: fmt.Errorf("message: %w", err)}
			}
		}
		return *msg.ToolCalls, Message, nil
	}
	return nil, One, fail(CodeInvalidCalls, "a JSON %s: expected a tool call object, an array of them, or a message with tool_calls", kindOf(value))
}

var errUnknownField = errors.New("unknown field")

func codeOf(err error) string {
	if errors.Is(err, errUnknownField) {
		return CodeUnknownField
	}
	return CodeInvalidCalls
}

func decodeCall(raw json.RawMessage, opts Options) (pipeline.Call, error) {
	var w wireCall
	if err := json.Unmarshal(raw, &w); err != nil {
		return pipeline.Call{}, fmt.Errorf("not a tool call object: %w", err)
	}
	if opts.DisallowUnknownFields {
		if err := onlyFields(raw, callFields); err != nil {
			return pipeline.Call{}, err
		}
	}
	return w.call(), nil
}

func (w *wireCall) call() pipeline.Call {
	c := pipeline.Call{ID: w.CallID, Name: w.Name, Arguments: w.Arguments}
	if c.ID == "" {
		c.ID = w.ID
	}
	if w.Function != nil {
		c.Name, c.Arguments = w.Function.Name, w.Function.Arguments
	}
	return c
}

// onlyFields refuses an object with a key outside known, naming the first in input order.
func onlyFields(obj json.RawMessage, known map[string]bool) error {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if !known[key] {
			return fmt.Errorf("%w %q", errUnknownField, key)
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	return nil
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
