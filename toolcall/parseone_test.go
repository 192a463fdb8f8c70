package toolcall

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzParseOne: wherever parseOne answers, parse (the general road) answers the same call.
func FuzzParseOne(f *testing.F) {
	for _, s := range []string{
		`{"name":"read_file","arguments":{"path":"small.txt"},"call_id":"load0-1"}`,
		`{"id":"c1","type":"function","function":{"name":"x","arguments":"{\"a\":1}"}}`,
		`{"NAME":"a"}`, `{"name":"a","name":"b"}`, `{"name":"a","tool_calls":null}`, `{"na\u006de":"a"}`,
		`{"name":"a","arguments":{"k\"ey":["}",{"x":"\\"}]}}`, `{"name":5}`, `{"name":"a"} x`, `{"extra":1}`,
		`{"tool_calls":[{"id":"1","function":{"name":"x","arguments":"{}"}}]}`, `{"function":null,"arguments":null}`,
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, in string, strict bool) {
		opts := Options{DisallowUnknownFields: strict}
		data := bytes.TrimSpace([]byte(in))
		c, ok := parseOne(data, opts)
		if !ok {
			return
		}
		calls, form, err := parse(data, opts)
		if err != nil || form != One || len(calls) != 1 || !reflect.DeepEqual(calls[0], c) {
			t.Fatalf("parseOne(%q) = %+v; parse says %+v, form %v, error %v", in, c, calls, form, err)
		}
	})
}

// TestParseOneAnswers: the requests a client sends most are read in one pass.
func TestParseOneAnswers(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{"name":"read_file","arguments":{"path":"small.txt"},"call_id":"load0-1"}`,
		`{"id":"c1","type":"function","function":{"name":"x","arguments":"{\"a\":\"}\"}"}}`,
	} {
		if _, ok := parseOne([]byte(in), Options{DisallowUnknownFields: true}); !ok {
			t.Errorf("parseOne(%s) left it to parse", in)
		}
	}
	for _, in := range []string{`{"name":"a","extra":1}`, `{"na\u006de":"a"}`, `{"name":"a","tool_calls":[]}`, `{"name":5}`} {
		if c, ok := parseOne([]byte(in), Options{DisallowUnknownFields: true}); ok {
			t.Errorf("parseOne(%s) answered %+v; parse refuses it", in, c)
		}
	}
}
