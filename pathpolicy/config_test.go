package pathpolicy_test

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/schema"
)

// TestExampleMatchesDefaults checks that testdata/policy.toml passes the [policy] schema,
// decodes into Config without unknown keys and spells out exactly the defaults.
func TestExampleMatchesDefaults(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile("testdata/policy.toml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../configs/policy.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Compile("https://airlock.dev/schema/policy.schema.json",
		schema.Resource{URL: "https://airlock.dev/schema/policy.schema.json", Data: src})
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Policy map[string]any `toml:"policy"`
	}
	if _, err := toml.Decode(string(text), &raw); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(raw.Policy)
	if vs := s.ValidateJSON("policy", data); vs != nil {
		t.Fatalf("schema: %v", vs)
	}
	var doc struct {
		Policy pathpolicy.Config `toml:"policy"`
	}
	md, err := toml.Decode(string(text), &doc)
	if err != nil {
		t.Fatal(err)
	}
	if u := md.Undecoded(); len(u) > 0 {
		t.Fatalf("keys Config does not know: %v", u)
	}
	want := pathpolicy.DefaultConfig()
	want.AllowedTools = []string{}
	if !reflect.DeepEqual(doc.Policy, want) {
		t.Errorf("example = %+v\ndefaults = %+v", doc.Policy, want)
	}
	bad := []byte(`{"max_read_bytes": "big", "colour": 1}`)
	if vs := s.ValidateJSON("policy", bad); len(vs) != 2 {
		t.Errorf("schema violations = %v", vs)
	}
}
