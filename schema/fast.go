package schema

import (
	"encoding/json"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// A valid value is the common case: every call's arguments and every tool's output are
// checked, and the library's walk allocates as it goes (closures, a map of each object's
// properties, an arbitrary-precision number for each integer), whatever the outcome; it was
// ~14 % of the objects an HTTP server allocated per call. So a schema made only of the
// keywords below is also compiled into a plan that says "valid" without allocating; a plan
// never says "invalid": what it cannot vouch for (a number not written as an integer, a
// value of a type it does not expect) goes to the library, which then decides and words the
// violations. A schema with any other keyword set, anywhere, gets no plan.
// TestFastPlanAgrees and FuzzFastPlan hold a plan to the library's verdict.

// plan checks values against one schema node.
type plan struct {
	always    *bool    // a boolean schema
	types     []string // empty: any type
	enum      []string // nil: no enum (a plan is made only for enums of strings)
	required  []string
	props     map[string]*plan
	closed    bool  // additionalProperties: false
	items     *plan // nil: no items keyword
	minLength int   // -1: none
	maxLength int
	pattern   *regexp.Regexp
	minimum   *int64
	maximum   *int64
	minItems  int // -1: none
	maxItems  int
}

// planned are the keywords a plan knows, by the library's field name; unset are the values
// the library leaves in the fields no keyword set (everything else unset is zero).
var (
	planned = map[string]bool{
		"Always": true, "Types": true, "Enum": true, "Required": true, "Properties": true,
		"AdditionalProperties": true, "Items2020": true, "MinLength": true, "MaxLength": true,
		"Pattern": true, "Minimum": true, "Maximum": true, "MinItems": true, "MaxItems": true,
		// Not keywords that check: where the schema is, and annotations.
		"Location": true, "Draft": true, "Title": true, "Description": true, "Default": true,
		"Comment": true, "ReadOnly": true, "WriteOnly": true, "Examples": true, "Deprecated": true,
		// How contains counts, which is not set (Contains, its schema, must be unset).
		"ContainsEval": true,
		// Unexported: the meta-schema and vocabularies of a root, its dynamic anchors, and the
		// enum's error message.
		"meta": true, "vocab": true, "dynamicAnchors": true, "enumError": true,
	}
	unset = map[string]int64{
		"MinProperties": -1, "MaxProperties": -1, "MinItems": -1, "MaxItems": -1,
		"MinContains": 1, "MaxContains": -1, "MinLength": -1, "MaxLength": -1,
	}
)

// compilePlan returns the plan of s, or nil when s uses a keyword a plan does not know.
func compilePlan(s *jsonschema.Schema, depth int) *plan {
	if s == nil || depth > 16 || !onlyPlanned(s) {
		return nil
	}
	p := &plan{always: s.Always, types: s.Types, required: s.Required, minLength: s.MinLength,
		maxLength: s.MaxLength, pattern: s.Pattern, minItems: s.MinItems, maxItems: s.MaxItems}
	for _, e := range s.Enum {
		str, ok := e.(string)
		if !ok {
			return nil
		}
		p.enum = append(p.enum, str)
	}
	if s.Enum != nil && p.enum == nil {
		return nil
	}
	var ok bool
	if p.minimum, ok = integer(s.Minimum); !ok {
		return nil
	}
	if p.maximum, ok = integer(s.Maximum); !ok {
		return nil
	}
	switch a := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		p.closed = !a
	default:
		return nil
	}
	if len(s.Properties) > 0 {
		p.props = make(map[string]*plan, len(s.Properties))
		for name, sub := range s.Properties {
			if p.props[name] = compilePlan(sub, depth+1); p.props[name] == nil {
				return nil
			}
		}
	}
	if s.Items2020 != nil {
		if p.items = compilePlan(s.Items2020, depth+1); p.items == nil {
			return nil
		}
	}
	return p
}

// onlyPlanned reports whether every field of s a plan does not know is unset.
func onlyPlanned(s *jsonschema.Schema) bool {
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if planned[name] {
			continue
		}
		f := v.Field(i)
		if def, ok := unset[name]; ok {
			if f.Int() != def {
				return false
			}
			continue
		}
		if !f.IsZero() {
			return false
		}
	}
	return true
}

// integer returns r as an int64 when it is one; ok is false for a bound a plan cannot hold.
func integer(r *big.Rat) (n *int64, ok bool) {
	if r == nil {
		return nil, true
	}
	if !r.IsInt() || !r.Num().IsInt64() {
		return nil, false
	}
	i := r.Num().Int64()
	return &i, true
}

// valid reports whether v, a value as Decode returns it, is certainly valid; false means
// "ask the library", not "invalid".
func (p *plan) valid(v any) bool {
	if p.always != nil {
		return *p.always
	}
	typ, ok := kind(v)
	if !ok {
		return false
	}
	if len(p.types) > 0 && !slices.Contains(p.types, typ) &&
		!(typ == "number" && slices.Contains(p.types, "integer") && isInteger(v.(json.Number))) {
		return false
	}
	if p.enum != nil {
		s, ok := v.(string)
		if !ok || !slices.Contains(p.enum, s) {
			return false
		}
	}
	switch v := v.(type) {
	case map[string]any:
		return p.validObject(v)
	case []any:
		if p.minItems != -1 && len(v) < p.minItems || p.maxItems != -1 && len(v) > p.maxItems {
			return false
		}
		if p.items != nil {
			for _, e := range v {
				if !p.items.valid(e) {
					return false
				}
			}
		}
	case string:
		if p.minLength != -1 || p.maxLength != -1 {
			n := utf8.RuneCountInString(v)
			if p.minLength != -1 && n < p.minLength || p.maxLength != -1 && n > p.maxLength {
				return false
			}
		}
		if p.pattern != nil && !p.pattern.MatchString(v) {
			return false
		}
	case json.Number:
		if p.minimum != nil || p.maximum != nil {
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil || p.minimum != nil && n < *p.minimum || p.maximum != nil && n > *p.maximum {
				return false
			}
		}
	}
	return true
}

func (p *plan) validObject(v map[string]any) bool {
	for _, name := range p.required {
		if _, ok := v[name]; !ok {
			return false
		}
	}
	for name, e := range v {
		sub, ok := p.props[name]
		if !ok {
			if p.closed {
				return false
			}
			continue
		}
		if !sub.valid(e) {
			return false
		}
	}
	return true
}

// kind is the JSON type of a decoded value; ok is false for anything Decode does not return.
func kind(v any) (string, bool) {
	switch v.(type) {
	case nil:
		return "null", true
	case bool:
		return "boolean", true
	case json.Number:
		return "number", true
	case string:
		return "string", true
	case []any:
		return "array", true
	case map[string]any:
		return "object", true
	}
	return "", false
}

// isInteger reports whether n is written as an integer: an optional minus and digits only.
// Other spellings of an integer (1.0, 1e3) are left to the library.
func isInteger(n json.Number) bool {
	s := string(n)
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
