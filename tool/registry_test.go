package tool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/schema"
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
		{"schema not JSON", func(d *Definition) { d.InputSchema = json.RawMessage(`{"type":`) }, "input schema: not valid JSON"},
		{"output schema not JSON", func(d *Definition) { d.OutputSchema = json.RawMessage(`[`) }, "output schema: not valid JSON"},
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

// A schema that is JSON but not a schema is registered (compiling waits for first use) and
// then refuses every call: nothing runs with it, and Registry.Compile names it.
func TestBrokenSchemaRefusesCalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mut  func(*Definition)
		want string
	}{
		{"input", func(d *Definition) { d.InputSchema = json.RawMessage(`{"type":5}`) }, `tool "broken_input": input schema`},
		{"output", func(d *Definition) { d.OutputSchema = json.RawMessage(`{"type":5}`) }, `tool "broken_output": output schema`},
	} {
		r := NewRegistry()
		if err := r.Register(def("fine")); err != nil {
			t.Fatal(err)
		}
		d := def("broken_" + tc.name)
		tc.mut(&d)
		if err := r.Register(d); err != nil {
			t.Fatalf("%s: register: %v", tc.name, err)
		}
		if err := r.Compile(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Compile = %v, want %q", tc.name, err, tc.want)
		}
		tl, _ := r.Lookup(d.Name)
		vs := tl.ValidateInput(json.RawMessage(`{"a":"x"}`))
		if len(vs) == 0 || !strings.Contains(vs.Error(), tc.want) {
			t.Errorf("%s: ValidateInput = %v, want a violation naming %q", tc.name, vs, tc.want)
		}
		if vs := tl.ValidateOutput(map[string]any{"n": 3}); len(vs) == 0 {
			t.Errorf("%s: ValidateOutput accepted output of a tool whose schemas do not compile", tc.name)
		}
	}
}

// TestWarmServesTheFirstCall: schemas compiled by Warm before a tool is registered are the
// ones its first call uses (not compiled again), in every registry of the process; a broken
// schema warmed is still refused at the call.
func TestWarmServesTheFirstCall(t *testing.T) {
	d := def("warmed")
	d.InputSchema = json.RawMessage(`{"type":"object","properties":{"warm":{"type":"string"}}}`)
	Warm(d)
	f, ok := compiledSchemas.Load(d.Name + ".input\x00" + string(d.InputSchema))
	if !ok {
		t.Fatal("Warm compiled nothing")
	}
	warm, err := f.(func() (*schema.Schema, error))()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		r := NewRegistry()
		if err := r.Register(d); err != nil {
			t.Fatal(err)
		}
		tl, _ := r.Lookup(d.Name)
		c, err := tl.schemas()
		if err != nil || c.input != warm {
			t.Fatalf("registry %d: the first call compiled its own schema (%p, want %p): %v", i, c.input, warm, err)
		}
		if vs := tl.ValidateInput(json.RawMessage(`{"warm":1}`)); len(vs) == 0 {
			t.Errorf("registry %d: a warmed schema accepted a number for a string", i)
		}
	}
	bad := def("warmed_broken")
	bad.InputSchema = json.RawMessage(`{"type":5}`)
	Warm(bad)
	r := NewRegistry()
	if err := r.Register(bad); err != nil {
		t.Fatal(err)
	}
	tl, _ := r.Lookup(bad.Name)
	if vs := tl.ValidateInput(json.RawMessage(`{}`)); len(vs) == 0 {
		t.Error("a broken schema, warmed, accepted a call")
	}
}
