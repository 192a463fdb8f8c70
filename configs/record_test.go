package configs

import (
	"context"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/backend"
)

// fakeSection is the section of a backend that only this test knows: adding a backend
// takes no change to the config package.
type fakeSection struct {
	Cluster  string   `toml:"cluster"`
	Replicas int      `toml:"replicas"`
	Paths    []string `toml:"paths"`
}

func init() {
	backend.Register(backend.Record{
		Kind:   "fake-k8s",
		Schema: []byte(`{"type": "object", "additionalProperties": false, "properties": {"cluster": {"type": "string"}, "replicas": {"type": "integer", "minimum": 1}, "paths": {"type": "array", "items": {"type": "string"}}}}`),
		NewConfig: func() any {
			return &fakeSection{Cluster: "default", Replicas: 1}
		},
		Open: func(context.Context, backend.Settings) (backend.Environment, error) { return nil, nil },
	})
}

func TestBackendSectionsComeFromRecords(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("[environment]\ntype = \"fake-k8s\"\n[environment.fake-k8s]\nreplicas = 3\n"), "/base")
	if err != nil {
		t.Fatal(err)
	}
	sec, ok := cfg.Environment.Section("fake-k8s").(*fakeSection)
	if !ok || sec.Replicas != 3 || sec.Cluster != "default" {
		t.Errorf("section %#v: want replicas from the file, cluster from the defaults", cfg.Environment.Section("fake-k8s"))
	}
	if cfg.Environment.Section("no-such-backend") != nil {
		t.Error("a section for an unknown kind")
	}
	for _, tc := range []struct{ name, toml, want string }{
		{"schema of the record", "[environment.fake-k8s]\nreplicas = 0\n", "environment.fake-k8s.replicas"},
		{"unknown key in a section", "[environment.fake-k8s]\nreplica = 2\n", "environment.fake-k8s.replica"},
		{"unknown kind", "[environment]\ntype = \"kvm\"\n", "environment.type"},
		{"unknown section", "[environment.kvm]\nx = 1\n", "environment.kvm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.toml), "/base")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}
