package tool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func nopHandler(context.Context, *Invocation) (*Output, error) { return &Output{}, nil }

func def(name string) Definition {
	return Definition{
		Name: name, Description: "d", Risk: RiskRead, Handler: nopHandler,
		InputSchema:  json.RawMessage(`{"type":"object","required":["a"],"properties":{"a":{"type":"string"}},"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`),
	}
}

func TestRegister(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	if err := r.Register(def("one")); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(def(strings.Repeat("n", 64))); err != nil {
		t.Errorf("a name of 64 bytes: %v", err)
	}
	if err := r.Register(def("one")); !errors.Is(err, ErrDuplicate) {
		t.Errorf("duplicate: err = %v, want ErrDuplicate", err)
	}
	bad := []struct {
		name string
		mut  func(*Definition)
		want string
	}{
		{"bad name", func(d *Definition) { d.Name = "has space" }, "name must match"},
		{"empty name", func(d *Definition) { d.Name = "" }, "name must match"},
		{"name too long", func(d *Definition) { d.Name = strings.Repeat("n", 65) }, "at most 64 bytes"},
		{"no handler", func(d *Definition) { d.Handler = nil }, "handler is required"},
		{"bad risk", func(d *Definition) { d.Risk = "scary" }, "risk"},
		{"bad mode", func(d *Definition) { d.Output.Mode = "tail" }, "output mode"},
		{"no input schema", func(d *Definition) { d.InputSchema = nil }, "input schema is required"},
		{"broken schema", func(d *Definition) { d.InputSchema = json.RawMessage(`{"type":5}`) }, "input schema"},
	}
	for _, tc := range bad {
		d := def("t_" + strings.ReplaceAll(tc.name, " ", "_"))
		tc.mut(&d)
		if err := r.Register(d); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	if err := r.Register(def("one")); err != nil {
		t.Fatal(err)
	}
	tl, _ := r.Lookup("one")
	if vs := tl.ValidateInput(json.RawMessage(`{"a":"x"}`)); vs != nil {
		t.Errorf("valid input: %v", vs)
	}
	if got := tl.ValidateInput(json.RawMessage(`{"b":1}`)).Error(); got != "arguments.a: missing property; arguments.b: unknown property" {
		t.Errorf("input violations = %q", got)
	}
	if vs := tl.ValidateOutput(map[string]any{"n": 3}); vs != nil {
		t.Errorf("valid output: %v", vs)
	}
	if got := tl.ValidateOutput(map[string]any{"n": "x"}).Error(); got != "output.n: expected integer, but got string" {
		t.Errorf("output violations = %q", got)
	}
}

func TestSpecsHideServerSide(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	for _, n := range []string{"b", "a"} {
		if err := r.Register(def(n)); err != nil {
			t.Fatal(err)
		}
	}
	data, err := json.Marshal(r.Specs())
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"function","function":{"name":"a","description":"d","parameters":{"type":"object","required":["a"],"properties":{"a":{"type":"string"}},"additionalProperties":false}}},` +
		`{"type":"function","function":{"name":"b","description":"d","parameters":{"type":"object","required":["a"],"properties":{"a":{"type":"string"}},"additionalProperties":false}}}]`
	if string(data) != want {
		t.Errorf("specs:\n%s\nwant\n%s", data, want)
	}
}
