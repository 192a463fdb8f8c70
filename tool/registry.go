package tool

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"sync"

	"github.com/airlock-dev/airlock/schema"
)

// ErrDuplicate is returned when a name is registered twice.
var ErrDuplicate = errors.New("tool already registered")

// nameChars is what a tool's name is made of; its length is checked apart (maxNameLen): a
// bounded repetition in the pattern ({1,64}) compiles to 64 copies of the class, which every
// airlock process paid for at start.
var nameChars = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

const maxNameLen = 64

// Tool is a registered definition. Its schemas are compiled on first use: compiling and
// checking a schema against its meta-schema costs ~0.5 ms a tool, and a process that runs one
// call of one tool (a cold `airlock exec`) paid it for every tool at start. [Registry.Compile]
// compiles them all at once, for tests and doctor.
type Tool struct {
	Definition
	schemas func() (compiled, error)
}

type compiled struct {
	input, output *schema.Schema
}

func compileSchemas(d Definition) func() (compiled, error) {
	return sync.OnceValues(func() (compiled, error) {
		var c compiled
		var err error
		if c.input, err = compileOnce(d.Name+".input", d.InputSchema); err != nil {
			return c, fmt.Errorf("tool %q: input schema: %w", d.Name, err)
		}
		if len(d.OutputSchema) > 0 {
			if c.output, err = compileOnce(d.Name+".output", d.OutputSchema); err != nil {
				return c, fmt.Errorf("tool %q: output schema: %w", d.Name, err)
			}
		}
		return c, nil
	})
}

// compiledSchemas holds every schema this process compiled, by name and source: a compiled
// schema is never changed, so the tools of every engine of the process share it, and a
// schema compiled ahead of its tool's first call (Warm) serves that call.
var compiledSchemas sync.Map // name + "\x00" + source → func() (*schema.Schema, error)

func compileOnce(name string, src []byte) (*schema.Schema, error) {
	key := name + "\x00" + string(src)
	f, ok := compiledSchemas.Load(key)
	if !ok {
		f, _ = compiledSchemas.LoadOrStore(key, sync.OnceValues(func() (*schema.Schema, error) {
			return schema.CompileJSON(name, src)
		}))
	}
	return f.(func() (*schema.Schema, error))()
}

// Warm compiles d's schemas now, for a caller that has time while it waits for something
// else (a cold `airlock exec` while its helper starts): the tool's first call then finds
// them compiled. Errors are left to that call.
func Warm(d Definition) {
	_, _ = compileSchemas(d)()
}

// ValidateInput checks arguments and reports every violation under "arguments". A tool whose
// schema does not compile (a defect of the tool, which Registry.Compile finds in tests)
// accepts nothing.
func (t *Tool) ValidateInput(args json.RawMessage) schema.Violations {
	c, err := t.schemas()
	if err != nil {
		return schema.Violations{{Path: "arguments", Message: err.Error()}}
	}
	return c.input.ValidateJSON("arguments", args)
}

// ValidateOutput checks a handler's Data under "output". A tool without an output schema
// accepts only nil Data.
func (t *Tool) ValidateOutput(data any) schema.Violations {
	_, vs := t.CheckOutput(data)
	return vs
}

// CheckOutput is ValidateOutput that also returns the data's JSON as checked (nil when the
// tool has no output schema, or the data could not be encoded).
func (t *Tool) CheckOutput(data any) ([]byte, schema.Violations) {
	c, err := t.schemas()
	if err != nil {
		return nil, schema.Violations{{Path: "output", Message: err.Error()}}
	}
	if c.output == nil {
		if data != nil {
			return nil, schema.Violations{{Path: "output", Message: "tool declares no output schema but returned data"}}
		}
		return nil, nil
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, schema.Violations{{Path: "output", Message: "not encodable as JSON: " + err.Error()}}
	}
	return raw, c.output.ValidateJSON("output", raw)
}

// Registry holds the tools a pipeline can run. It is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]*Tool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{tools: map[string]*Tool{}} }

// Register checks a definition, compiles its schemas and adds it.
func (r *Registry) Register(d Definition) error {
	if len(d.Name) > maxNameLen || !nameChars.MatchString(d.Name) {
		return fmt.Errorf("tool %q: name must match %s, at most %d bytes", d.Name, nameChars, maxNameLen)
	}
	if d.Handler == nil {
		return fmt.Errorf("tool %q: handler is required", d.Name)
	}
	if !d.Risk.valid() {
		return fmt.Errorf("tool %q: risk %q is not one of read, write, shell, network, dangerous", d.Name, d.Risk)
	}
	if d.Output.Mode == "" {
		d.Output.Mode = HeadTail
	}
	if !ValidOutputMode(d.Output.Mode) {
		return fmt.Errorf("tool %q: output mode %q is not head_tail, full or summary_only", d.Name, d.Output.Mode)
	}
	if d.Version == "" {
		d.Version = "1"
	}
	if len(d.InputSchema) == 0 {
		return fmt.Errorf("tool %q: input schema is required", d.Name)
	}
	if !json.Valid(d.InputSchema) {
		return fmt.Errorf("tool %q: input schema: not valid JSON", d.Name)
	}
	if len(d.OutputSchema) > 0 && !json.Valid(d.OutputSchema) {
		return fmt.Errorf("tool %q: output schema: not valid JSON", d.Name)
	}
	t := &Tool{Definition: d, schemas: compileSchemas(d)}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[d.Name]; dup {
		return fmt.Errorf("tool %q: %w", d.Name, ErrDuplicate)
	}
	r.tools[d.Name] = t
	return nil
}

// SetOutputMode changes how a registered tool's output reaches the model (the config's
// [tools] output_mode).
func (r *Registry) SetOutputMode(name string, m OutputMode) error {
	if !ValidOutputMode(m) {
		return fmt.Errorf("output mode %q is not head_tail, full or summary_only", m)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.tools[name]
	if !ok {
		return fmt.Errorf("no tool named %q is offered", name)
	}
	t.Output.Mode = m
	return nil
}

// Compile compiles every registered tool's schemas now and returns the first that fails,
// by tool name. Registration leaves compiling to a tool's first call.
func (r *Registry) Compile() error {
	for _, n := range r.Names() {
		t, _ := r.Lookup(n)
		if _, err := t.schemas(); err != nil {
			return err
		}
	}
	return nil
}

// Lookup returns the tool registered under name.
func (r *Registry) Lookup(name string) (*Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// Names returns the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.tools))
	for n := range r.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Spec is the model-facing description of a tool, in the OpenAI `tools` format.
type Spec struct {
	Type     string       `json:"type"`
	Function FunctionSpec `json:"function"`
}

// FunctionSpec is the function part of a Spec.
type FunctionSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Specs returns what a model is shown of every tool, sorted by name. Nothing of the
// server-side definition (risk, paths, handler) leaks into it.
func (r *Registry) Specs() []Spec {
	var out []Spec
	for _, n := range r.Names() {
		t, _ := r.Lookup(n)
		out = append(out, Spec{Type: "function", Function: FunctionSpec{
			Name: t.Name, Description: t.Description, Parameters: t.InputSchema,
		}})
	}
	return out
}
