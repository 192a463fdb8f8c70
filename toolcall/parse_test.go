package toolcall_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/toolcall"
)

func TestParseForms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		form     toolcall.Form
		want     []pipeline.Call
	}{
		{"one", `{"name":"terminal","arguments":{"command":"ls"},"call_id":"c1"}`, toolcall.One,
			[]pipeline.Call{{ID: "c1", Name: "terminal", Arguments: []byte(`{"command":"ls"}`)}}},
		{"array", `[{"name":"a"},{"name":"b","call_id":"x"}]`, toolcall.Array,
			[]pipeline.Call{{Name: "a"}, {ID: "x", Name: "b"}}},
		{"openai message", `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}}]}`,
			toolcall.Message, []pipeline.Call{{ID: "call_1", Name: "read_file", Arguments: []byte(`"{\"path\":\"a\"}"`)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, form, err := toolcall.Parse([]byte(tc.in), toolcall.Options{DisallowUnknownFields: true})
			if err != nil || form != tc.form || len(got) != len(tc.want) {
				t.Fatalf("Parse = %+v %v %v", got, form, err)
			}
			for i := range got {
				if got[i].ID != tc.want[i].ID || got[i].Name != tc.want[i].Name || string(got[i].Arguments) != string(tc.want[i].Arguments) {
					t.Errorf("call %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestParseErrorsNameTheProblem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, code, says string }{
		{`{"name":"terminal"} garbage`, toolcall.CodeInvalidJSON, `followed by more text at byte 20 ("garbage")`},
		{"{\n\"name\": }", toolcall.CodeInvalidJSON, "line 2, column 9"},
		{`{"name":"t","argumnets":{}}`, toolcall.CodeUnknownField, `call 0: unknown field "argumnets"`},
		{`{"tool_calls":[],"role":"assistant","extra":1}`, toolcall.CodeUnknownField, `message: unknown field "extra"`},
		{`[{"name":"a"},{"name":"b","x":1}]`, toolcall.CodeUnknownField, `call 1: unknown field "x"`},
		{`{"tool_calls": 5}`, toolcall.CodeInvalidCalls, "tool_calls: expected an array"},
		{`5`, toolcall.CodeInvalidCalls, "a JSON number"},
		{``, toolcall.CodeInvalidCalls, "empty"},
	} {
		_, _, err := toolcall.Parse([]byte(tc.in), toolcall.Options{DisallowUnknownFields: true})
		var te *toolcall.Error
		if !errors.As(err, &te) || te.Code != tc.code || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Parse(%q) = %v, want %s saying %q", tc.in, err, tc.code, tc.says)
		}
	}
	// Without the option, unknown fields pass, as `airlock call` has always taken them.
	if _, _, err := toolcall.Parse([]byte(`{"name":"t","extra":1}`), toolcall.Options{}); err != nil {
		t.Errorf("lax parse: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"name":"a"}`, `[{"name":"a"}]`, `{"tool_calls":[{"id":"1","function":{"name":"x","arguments":"{}"}}]}`, `{"a":`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		calls, _, err := toolcall.Parse([]byte(in), toolcall.Options{DisallowUnknownFields: true})
		var te *toolcall.Error
		if err != nil && !errors.As(err, &te) {
			t.Fatalf("error not a *toolcall.Error: %v", err)
		}
		if err == nil && calls == nil {
			t.Fatal("no calls and no error")
		}
	})
}

func TestToolMessages(t *testing.T) {
	t.Parallel()
	msgs := toolcall.Messages([]pipeline.Result{
		{CallID: "a", Status: pipeline.StatusOK, Content: "out\n"},
		{CallID: "b", Status: pipeline.StatusDenied, ErrorCode: "outside_roots", ErrorMessage: "no", Metadata: pipeline.Metadata{Notes: []string{"n1"}}},
	})
	if msgs[0] != (toolcall.ToolMessage{Role: "tool", ToolCallID: "a", Content: "out\n"}) {
		t.Errorf("ok: %+v", msgs[0])
	}
	if msgs[1].ToolCallID != "b" || msgs[1].Content != "denied (outside_roots): no\n[note] n1\n" {
		t.Errorf("denied: %+v", msgs[1])
	}
}
