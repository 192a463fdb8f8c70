package schema

import (
	"slices"
	"testing"
)

const writeFileSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["path", "content"],
  "properties": {
    "path": {"type": "string", "minLength": 1},
    "content": {"type": "string"},
    "mode": {"enum": ["a", "b"]},
    "items": {"type": "array", "items": {"type": "object", "required": ["x"], "properties": {"x": {"type": "integer"}}}}
  }
}`

func TestValidate(t *testing.T) {
	t.Parallel()
	s := MustCompileJSON("write_file", writeFileSchema)
	tests := []struct {
		name string
		json string
		want []string
	}{
		{"valid", `{"path":"a","content":""}`, nil},
		{"missing one", `{"path":"a"}`, []string{"arguments.content: missing property"}},
		{"missing both", `{}`, []string{"arguments.content: missing property", "arguments.path: missing property"}},
		{"unknown and wrong type", `{"path":1,"content":"x","extra":true}`,
			[]string{"arguments.extra: unknown property", "arguments.path: expected string, but got number"}},
		{"nested array", `{"path":"a","content":"","items":[{"x":1},{},{"x":"s"}]}`,
			[]string{"arguments.items[1].x: missing property", "arguments.items[2].x: expected integer, but got string"}},
		{"enum", `{"path":"a","content":"","mode":"c"}`, []string{`arguments.mode: value must be one of "a", "b"`}},
		{"not json", `{`, []string{"arguments: not valid JSON: unexpected EOF"}},
		{"not object", `[]`, []string{"arguments: expected object, but got array"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, v := range s.ValidateJSON("arguments", []byte(tc.json)) {
				got = append(got, v.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestCompileRejectsBadSchema(t *testing.T) {
	t.Parallel()
	if _, err := CompileJSON("bad", []byte(`{"type": 12}`)); err == nil {
		t.Fatal("compiled a schema with a bad type")
	}
	if _, err := CompileJSON("bad", []byte(`{`)); err == nil {
		t.Fatal("compiled invalid JSON")
	}
}
