package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// Schema is a compiled JSON Schema.
type Schema struct {
	s   *jsonschema.Schema
	raw json.RawMessage
	// fast is the schema's plan (fast.go), made on first use; nil when it has none.
	fastOnce sync.Once
	fast     *plan
}

// Resource is one schema document, addressed by URL so that others can $ref it.
type Resource struct {
	URL  string
	Data []byte
}

// Compile compiles the schema at url from the given resources (draft 2020-12 unless a
// document says otherwise).
func Compile(url string, resources ...Resource) (*Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	var raw json.RawMessage
	for _, r := range resources {
		if err := c.AddResource(r.URL, bytes.NewReader(r.Data)); err != nil {
			return nil, fmt.Errorf("schema %s: %w", r.URL, err)
		}
		if r.URL == url {
			raw = r.Data
		}
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", url, err)
	}
	return &Schema{s: s, raw: raw}, nil
}

// MustCompileJSON compiles a single self-contained schema given as JSON text; it panics on a
// bad schema, which is a programming error.
func MustCompileJSON(name, text string) *Schema {
	s, err := CompileJSON(name, []byte(text))
	if err != nil {
		panic(err)
	}
	return s
}

// CompileJSON compiles a single self-contained schema.
func CompileJSON(name string, data []byte) (*Schema, error) {
	if !json.Valid(data) {
		return nil, fmt.Errorf("schema %s: not valid JSON", name)
	}
	return Compile("mem:///"+name+".json", Resource{URL: "mem:///" + name + ".json", Data: data})
}

// JSON returns the schema's source document.
func (s *Schema) JSON() json.RawMessage { return s.raw }

// FieldError is a config section's setting that cannot work, found by the section's own
// Validate beyond its schema: Section names the table ("metrics"), Field its key.
type FieldError struct {
	Section string
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Section + "." + e.Field + ": " + e.Message }

// Violation is one way in which a value breaks a schema.
type Violation struct {
	// Path is the dotted location of the value, starting with the prefix passed to
	// Validate: "arguments.content", "environment.docker.volumes[0].host".
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (v Violation) String() string { return v.Path + ": " + v.Message }

// Violations is a list of violations; as an error it reads as all of them joined by "; ".
type Violations []Violation

func (vs Violations) Error() string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.String()
	}
	return strings.Join(parts, "; ")
}

// Validate checks v (a value as encoding/json decodes it: map[string]any, []any, string,
// float64 or json.Number, bool, nil) and returns every violation, sorted by path, with
// paths starting at prefix. It returns nil when v is valid.
func (s *Schema) Validate(prefix string, v any) Violations {
	s.fastOnce.Do(func() { s.fast = compilePlan(s.s, 0) })
	if s.fast != nil && s.fast.valid(v) {
		return nil
	}
	err := s.s.Validate(v)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return Violations{{Path: prefix, Message: err.Error()}}
	}
	var out Violations
	seen := map[string]bool{}
	add := func(v Violation) {
		if k := v.String(); !seen[k] {
			seen[k] = true
			out = append(out, v)
		}
	}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		for _, v := range leafViolations(prefix, e) {
			add(v)
		}
	}
	walk(ve)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// ValidateJSON decodes data and validates it.
func (s *Schema) ValidateJSON(prefix string, data []byte) Violations {
	v, err := Decode(data)
	if err != nil {
		return Violations{{Path: prefix, Message: "not valid JSON: " + err.Error()}}
	}
	return s.Validate(prefix, v)
}

// Decode decodes JSON the way the validator expects (numbers as json.Number).
func Decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

var quoted = regexp.MustCompile(`'((?:[^'\\]|\\.)*)'`)

// leafViolations rewrites one leaf error. Missing and unknown properties name the property in
// the path rather than in the message, so that each gets a line of its own.
func leafViolations(prefix string, e *jsonschema.ValidationError) []Violation {
	base := joinPath(prefix, e.InstanceLocation)
	switch {
	case strings.HasPrefix(e.Message, "missing properties:"):
		var vs []Violation
		for _, m := range quoted.FindAllStringSubmatch(e.Message, -1) {
			vs = append(vs, Violation{Path: joinKey(base, m[1]), Message: "missing property"})
		}
		if len(vs) > 0 {
			return vs
		}
	case strings.HasPrefix(e.Message, "additionalProperties ") && strings.HasSuffix(e.Message, " not allowed"):
		var vs []Violation
		for _, m := range quoted.FindAllStringSubmatch(e.Message, -1) {
			vs = append(vs, Violation{Path: joinKey(base, m[1]), Message: "unknown property"})
		}
		if len(vs) > 0 {
			return vs
		}
	case e.Message == "not allowed" && strings.HasSuffix(e.KeywordLocation, "/false"):
		return []Violation{{Path: base, Message: "unknown property"}}
	}
	return []Violation{{Path: base, Message: e.Message}}
}

// joinPath turns a JSON pointer ("/a/0/b") into a dotted path under prefix ("p.a[0].b").
func joinPath(prefix, pointer string) string {
	p := prefix
	if pointer == "" {
		return p
	}
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		if isIndex(tok) {
			p += "[" + tok + "]"
			continue
		}
		p = joinKey(p, tok)
	}
	return p
}

func joinKey(p, key string) string {
	if p == "" {
		return key
	}
	return p + "." + key
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
