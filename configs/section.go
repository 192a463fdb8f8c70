package configs

import (
	"bytes"
	"fmt"
	"maps"
	"slices"

	"github.com/BurntSushi/toml"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/schema"
)

// decodeSections decodes each backend's [environment.KIND] of the file (data, and raw, the
// same file decoded as a map) into the type its record's NewConfig returns, reads the keys
// given under a former name (see [renamed]) and reports the keys a section does not have.
// A kind the file does not mention has no entry: [Environment.Section] gives its defaults.
func decodeSections(data string, raw map[string]any) (map[string]any, schema.Violations, error) {
	var file struct {
		Environment map[string]toml.Primitive `toml:"environment"`
	}
	md, err := toml.Decode(data, &file)
	if err != nil {
		return nil, nil, err
	}
	tables, _ := raw["environment"].(map[string]any)
	var sections map[string]any
	var vs schema.Violations
	for kind, prim := range file.Environment {
		r, ok := backend.Lookup(kind)
		if !ok {
			continue // a common key, or unknown: Parse says which
		}
		sec := r.NewConfig()
		if err := md.PrimitiveDecode(prim, sec); err != nil {
			vs = append(vs, schema.Violation{Path: "environment." + kind, Message: err.Error()})
			continue
		}
		table, _ := tables[kind].(map[string]any)
		vs = append(vs, renamed(r, table, sec)...)
		if sections == nil {
			sections = map[string]any{}
		}
		sections[kind] = sec
	}
	for _, k := range md.Undecoded() {
		if len(k) < 3 || k[0] != "environment" {
			continue
		}
		if r, ok := backend.Lookup(k[1]); ok {
			if _, former := r.Renamed[k[2]]; !former {
				vs = append(vs, schema.Violation{Path: k.String(), Message: "unknown key"})
			}
		}
	}
	return sections, vs, nil
}

// renamed reads the keys of table, a backend's section as the file gives it, that have a
// former name in [backend.Record.Renamed] onto sec as their current names, and gives sec a
// note on each (sec embeds [backend.OldKeys]: Register makes sure). A key given under both
// names is refused with both named: which value was meant cannot be told.
//
// The note says why the name changed. Every former name so far is one of the resident
// helper's from when it was called "agent", the word that means the AI agent; a rename for
// another reason would bring its reason with it.
func renamed(r backend.Record, table map[string]any, sec any) schema.Violations {
	var vs schema.Violations
	at := "environment." + r.Kind + "."
	for _, former := range slices.Sorted(maps.Keys(r.Renamed)) {
		value, ok := table[former]
		if !ok {
			continue
		}
		current := r.Renamed[former]
		if _, both := table[current]; both {
			vs = append(vs, schema.Violation{Path: at + former, Message: fmt.Sprintf(
				"%s%s and %s%s are the same setting (%s is its deprecated former name): give only %s",
				at, current, at, former, former, current)})
			continue
		}
		if err := decodeAs(current, value, sec); err != nil {
			vs = append(vs, schema.Violation{Path: at + former, Message: err.Error()})
			continue
		}
		sec.(backend.OldKeyNoter).NoteOldKey(fmt.Sprintf(
			"%s%s is deprecated: call it %s (the resident helper is not the agent)", at, former, current))
	}
	return vs
}

// decodeAs decodes value onto sec as if the file had given it under key. The section was
// decoded from the file's text, which names the key by its former name, so the value goes
// through a TOML document of its own: key = value.
func decodeAs(key string, value any, sec any) error {
	var doc bytes.Buffer
	if err := toml.NewEncoder(&doc).Encode(map[string]any{key: value}); err != nil {
		return fmt.Errorf("encode %s: %w", key, err)
	}
	_, err := toml.Decode(doc.String(), sec)
	return err
}
