package schema

import (
	"testing"
)

// planSchemas are schemas a plan is made for: read_file's input and output as fileops
// declares them, and TestValidate's.
var planSchemas = []string{
	`{
  "type": "object",
  "additionalProperties": false,
  "required": ["path"],
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File to read."},
    "offset": {"type": "integer", "minimum": 1},
    "limit": {"type": "integer", "minimum": 1}
  }
}`,
	`{
  "type": "object",
  "additionalProperties": false,
  "required": ["path"],
  "properties": {
    "path": {"type": "string"},
    "first_line": {"type": "integer"},
    "more": {"type": "boolean"},
    "size": {"type": "integer"},
    "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    "lines": {"type": "array", "items": {"type": "integer", "maximum": 10}, "minItems": 1, "maxItems": 3},
    "mode": {"enum": ["a", "b"]},
    "any": true,
    "either": {"type": ["string", "null"], "maxLength": 3}
  }
}`,
	writeFileSchema,
}

// noPlanSchemas use a keyword a plan does not know, somewhere.
var noPlanSchemas = []string{
	`{"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}}`,
	`{"type": "object", "additionalProperties": {"type": "string"}}`,
	`{"type": "string", "format": "email"}`,
	`{"type": "array", "uniqueItems": true}`,
	`{"type": "object", "minProperties": 1}`,
	`{"$defs": {"x": {"type": "string"}}, "type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}}`,
	`{"type": "number", "minimum": 1.5}`,
	`{"enum": ["a", 1]}`,
	`{"const": "a"}`,
	`{"type": "array", "prefixItems": [{"type": "string"}]}`,
	`{"type": "object", "patternProperties": {"^x": {"type": "string"}}}`,
	`{"type": "object", "dependentRequired": {"a": ["b"]}}`,
	`{"not": {"type": "string"}}`,
}

// agreeValues are values to try against every schema.
var agreeValues = []string{
	`{"path":"small.txt"}`, `{"path":""}`, `{"path":"a","offset":1,"limit":2000}`, `{"path":"a","offset":0}`,
	`{"path":"a","offset":1.0}`, `{"path":"a","offset":1e3}`, `{"path":"a","offset":-3}`, `{"path":"a","offset":"1"}`,
	`{"path":"a","extra":1}`, `{}`, `[]`, `"x"`, `null`, `1`, `{"path":null}`,
	`{"path":"a","first_line":1,"more":true,"size":6,"sha256":"` + "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03" + `"}`,
	`{"path":"a","sha256":"XYZ"}`, `{"path":"a","lines":[1,2]}`, `{"path":"a","lines":[]}`, `{"path":"a","lines":[1,2,3,4]}`,
	`{"path":"a","lines":[11]}`, `{"path":"a","lines":[1.5]}`, `{"path":"a","mode":"a"}`, `{"path":"a","mode":"c"}`,
	`{"path":"a","any":{"x":[1]}}`, `{"path":"a","either":null}`, `{"path":"a","either":"abcd"}`, `{"path":"a","either":"ééé"}`,
	`{"path":"a","content":"","mode":"b","items":[{"x":1},{"x":2.5}]}`, `{"path":"a","content":"x","items":[{}]}`,
	`{"path":"a","first_line":99999999999999999999}`, `{"path":"a","offset":99999999999999999999}`,
}

func TestFastPlanAgrees(t *testing.T) {
	t.Parallel()
	for i, text := range planSchemas {
		s := MustCompileJSON("plan", text)
		p := compilePlan(s.s, 0)
		if p == nil {
			t.Fatalf("schema %d: no plan", i)
		}
		for _, val := range agreeValues {
			v, err := Decode([]byte(val))
			if err != nil {
				t.Fatal(err)
			}
			lib := s.s.Validate(v) == nil
			if p.valid(v) && !lib {
				t.Errorf("schema %d: the plan finds %s valid, the library does not", i, val)
			}
			if vs := s.Validate("arguments", v); (len(vs) == 0) != lib {
				t.Errorf("schema %d: Validate(%s) = %v, the library says valid = %v", i, val, vs, lib)
			}
		}
	}
	// The common case is the plan's to answer: read_file's own arguments and output.
	for i, val := range []string{agreeValues[0], agreeValues[2], agreeValues[15]} {
		v, _ := Decode([]byte(val))
		if !compilePlan(MustCompileJSON("plan", planSchemas[i/2]).s, 0).valid(v) {
			t.Errorf("the plan leaves %s to the library", val)
		}
	}
}

func TestNoPlanForOtherKeywords(t *testing.T) {
	t.Parallel()
	for _, text := range noPlanSchemas {
		if p := compilePlan(MustCompileJSON("noplan", text).s, 0); p != nil {
			t.Errorf("a plan was made for %s", text)
		}
	}
}

// FuzzFastPlan: wherever a plan says valid, the library agrees.
func FuzzFastPlan(f *testing.F) {
	for _, v := range agreeValues {
		f.Add(uint8(0), v)
		f.Add(uint8(1), v)
		f.Add(uint8(2), v)
	}
	schemas := make([]*Schema, len(planSchemas))
	plans := make([]*plan, len(planSchemas))
	for i, text := range planSchemas {
		schemas[i] = MustCompileJSON("plan", text)
		plans[i] = compilePlan(schemas[i].s, 0)
	}
	f.Fuzz(func(t *testing.T, which uint8, val string) {
		i := int(which) % len(schemas)
		v, err := Decode([]byte(val))
		if err != nil {
			return
		}
		if plans[i].valid(v) && schemas[i].s.Validate(v) != nil {
			t.Fatalf("schema %d: the plan finds %s valid, the library does not: %v", i, val, schemas[i].s.Validate(v))
		}
	})
}
