// Package docs holds no code: its tests hold the reference pages to the code they describe,
// so that a key, a code or a command added to the code and left out of its page fails.
package docs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// referencePage is the page that documents every configuration key with its default.
const referencePage = "configuration.md"

// TestEveryKeyIsDocumented walks the schemas the loader checks a config against (configs/*.schema.json
// and each backend package's config.schema.json) and wants each key as a row of its
// section's table in docs/configuration.md: a heading "### `[section]`", then a row that
// starts "| `key` |". A key of an array's objects (volumes' host) must be named in its row.
// An object with keys of its own ([approvals.smart]) is a section of its own.
func TestEveryKeyIsDocumented(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(referencePage)
	if err != nil {
		t.Fatalf("read the reference page: %v", err)
	}
	sections := docSections(string(page))
	keys := map[string][]schemaKey{}
	top := readSchema(t, "airlock.schema.json")
	for name, prop := range properties(top) {
		collectKeys(t, name, prop, keys)
	}
	// The backends' sections, from their packages (a test in this package registers a fake
	// backend whose record is not a user's).
	files, err := filepath.Glob("../backend/*/config.schema.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no backend schemas: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var s map[string]any
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatalf("schema %s: %v", f, err)
		}
		collectKeys(t, "environment."+filepath.Base(filepath.Dir(f)), s, keys)
	}
	if len(keys) < 10 {
		t.Fatalf("found %d sections in the schemas: the walk is broken", len(keys))
	}
	names := make([]string, 0, len(keys))
	for name := range keys {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, section := range names {
		rows, ok := sections[section]
		if !ok {
			t.Errorf("%s: no heading \"### `[%s]`\" in %s", section, section, referencePage)
			continue
		}
		for _, k := range keys[section] {
			row, ok := rows[k.name]
			if !ok {
				t.Errorf("%s.%s: no row \"| `%s` |\" under [%s] in %s", section, k.name, k.name, section, referencePage)
				continue
			}
			for _, item := range k.itemKeys {
				if !strings.Contains(row, item) {
					t.Errorf("%s.%s: its row does not name the item key %q", section, k.name, item)
				}
			}
		}
	}
}

type schemaKey struct {
	name     string
	itemKeys []string
}

// collectKeys records the keys of the object schema s as the section name; a $ref to another
// schema file of this package is read in its place.
func collectKeys(t *testing.T, section string, s map[string]any, keys map[string][]schemaKey) {
	t.Helper()
	s = resolve(t, s)
	props := properties(s)
	if props == nil {
		t.Fatalf("%s: no properties in its schema", section)
	}
	keys[section] = []schemaKey{}
	for name, p := range props {
		p = resolve(t, p)
		if _, sub := p["properties"]; sub {
			collectKeys(t, section+"."+name, p, keys)
			continue
		}
		k := schemaKey{name: name}
		if items, ok := p["items"].(map[string]any); ok {
			for item := range properties(items) {
				k.itemKeys = append(k.itemKeys, item)
			}
		}
		keys[section] = append(keys[section], k)
	}
}

func resolve(t *testing.T, s map[string]any) map[string]any {
	t.Helper()
	if ref, ok := s["$ref"].(string); ok && strings.HasSuffix(ref, ".schema.json") {
		return readSchema(t, ref)
	}
	return s
}

func readSchema(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "configs", name))
	if err != nil {
		t.Fatalf("read schema %s: %v", name, err)
	}
	var s map[string]any
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("schema %s: %v", name, err)
	}
	return s
}

func properties(s map[string]any) map[string]map[string]any {
	raw, ok := s["properties"].(map[string]any)
	if !ok {
		return nil
	}
	out := make(map[string]map[string]any, len(raw))
	for name, v := range raw {
		if m, ok := v.(map[string]any); ok {
			out[name] = m
		}
	}
	return out
}

var (
	sectionHeading = regexp.MustCompile("^### `\\[([a-z_.]+)\\]`")
	keyRow         = regexp.MustCompile("^\\| `([a-z_]+)` \\|")
)

// docSections reads the page's tables: section name → key → the row's text.
func docSections(page string) map[string]map[string]string {
	out := map[string]map[string]string{}
	var cur map[string]string
	for _, line := range strings.Split(page, "\n") {
		if m := sectionHeading.FindStringSubmatch(line); m != nil {
			cur = map[string]string{}
			out[m[1]] = cur
			continue
		}
		if strings.HasPrefix(line, "#") {
			cur = nil
			continue
		}
		if m := keyRow.FindStringSubmatch(line); m != nil && cur != nil {
			cur[m[1]] = line
		}
	}
	return out
}
