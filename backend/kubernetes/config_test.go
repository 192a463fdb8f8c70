package kubernetes_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/kubernetes"
)

// TestValidateNamesKeys: each refused value is named by its key, with the reason.
func TestValidateNamesKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want string
		edit       func(*kubernetes.Config)
	}{
		{"no image", "environment.kubernetes.image: required", func(c *kubernetes.Config) { c.Image = "" }},
		{"pull policy", "environment.kubernetes.pull_policy", func(c *kubernetes.Config) { c.PullPolicy = "Sometimes" }},
		{"workdir /tmp", "environment.kubernetes.workdir", func(c *kubernetes.Config) { c.Workdir = "/tmp" }},
		{"relative workdir", "environment.kubernetes.workdir", func(c *kubernetes.Config) { c.Workdir = "ws" }},
		{"bad quantity", "environment.kubernetes.memory_limit", func(c *kubernetes.Config) { c.MemoryLimit = "lots" }},
		{"zero limit", "environment.kubernetes.cpu_limit: must be above 0", func(c *kubernetes.Config) { c.CPULimit = "0" }},
		{"namespace", "environment.kubernetes.namespace", func(c *kubernetes.Config) { c.Namespace = "Not_A_Name" }},
		{"toleration", "environment.kubernetes.tolerations[0].effect", func(c *kubernetes.Config) {
			c.Tolerations = []kubernetes.Toleration{{Key: "k", Effect: "Sometimes"}}
		}},
		{"enforcement", "environment.kubernetes.network_policy_enforcement", func(c *kubernetes.Config) { c.NetworkPolicyEnforcement = "hope" }},
		{"none without enforcement", `[network] mode "none" cannot hold`, func(c *kubernetes.Config) {
			c.Network, c.NetworkPolicyEnforcement = backend.NetworkNone, kubernetes.EnforceOff
		}},
		{"allowlist without enforcement", `[network] mode "allowlist" cannot hold`, func(c *kubernetes.Config) {
			c.Network, c.NetworkPolicyEnforcement = backend.NetworkAllowlist, kubernetes.EnforceOff
		}},
		{"unknown network mode", `[network] mode "some": the kubernetes backend gives none, allowlist or open`, func(c *kubernetes.Config) { c.Network = "some" }},
		{"no deadline", "environment.kubernetes.pod_start_timeout", func(c *kubernetes.Config) { c.PodStartTimeout = -1 }},
		{"pool too big", "environment.kubernetes.warm_pool: want 0 to 64", func(c *kubernetes.Config) { c.WarmPool = 65 }},
		{"negative pool", "environment.kubernetes.warm_pool", func(c *kubernetes.Config) { c.WarmPool = -1 }},
		{"workspace volume", `environment.kubernetes.workspace_volume: want "emptyDir" or "pvc"`, func(c *kubernetes.Config) { c.WorkspaceVolume = "hostPath" }},
		{"claim with a pool", "environment.kubernetes.workspace_volume: \"pvc\" makes a claim per session", func(c *kubernetes.Config) { c.WorkspaceVolume, c.WarmPool = kubernetes.VolumePVC, 2 }},
		{"class without a claim", "environment.kubernetes.storage_class: only with workspace_volume", func(c *kubernetes.Config) { c.StorageClass = "fast" }},
		{"bad class", "environment.kubernetes.storage_class: \"Fast_SSD\" is not a valid name", func(c *kubernetes.Config) { c.WorkspaceVolume, c.StorageClass = kubernetes.VolumePVC, "Fast_SSD" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := kubernetes.DefaultConfig()
			c.Image = "busybox"
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
	c := kubernetes.DefaultConfig()
	c.Image = "busybox"
	if err := c.Validate(); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
}

// TestSchemaMatchesConfig: every TOML key of Config, and every former name of one that the
// record's Renamed reads, is in the schema and the other way round.
func TestSchemaMatchesConfig(t *testing.T) {
	t.Parallel()
	r, ok := backend.Lookup("kubernetes")
	if !ok {
		t.Fatal("no kubernetes record")
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(r.Schema, &schema); err != nil {
		t.Fatal(err)
	}
	var inSchema, inStruct []string
	for k := range schema.Properties {
		inSchema = append(inSchema, k)
	}
	ct := reflect.TypeOf(kubernetes.Config{})
	for i := 0; i < ct.NumField(); i++ {
		if tag := ct.Field(i).Tag.Get("toml"); tag != "" && tag != "-" {
			inStruct = append(inStruct, tag)
		}
	}
	for former, current := range r.Renamed {
		if !slices.Contains(inStruct, current) {
			t.Errorf("Renamed reads %s as %s, which Config does not have", former, current)
		}
		inStruct = append(inStruct, former)
	}
	sort.Strings(inSchema)
	sort.Strings(inStruct)
	if !reflect.DeepEqual(inSchema, inStruct) {
		t.Errorf("schema keys %q\nstruct keys %q", inSchema, inStruct)
	}
}

// TestRecordDerivesNetwork: [network] reaches the section through the record's Derive;
// allowlist brings the egress proxy as an option, and without one is refused rather than
// given as something weaker.
func TestRecordDerivesNetwork(t *testing.T) {
	t.Parallel()
	r, _ := backend.Lookup("kubernetes")
	for _, mode := range []backend.NetworkMode{backend.NetworkNone, backend.NetworkOpen} {
		sec := r.NewConfig().(*kubernetes.Config)
		if _, err := r.Derive(sec, backend.Policy{Network: backend.NetworkPolicy{Mode: mode}}); err != nil || sec.Network != mode {
			t.Errorf("%s: network %q, err %v", mode, sec.Network, err)
		}
	}
	sec := r.NewConfig().(*kubernetes.Config)
	if _, err := r.Derive(sec, backend.Policy{Network: backend.NetworkPolicy{Mode: backend.NetworkAllowlist}}); err == nil {
		t.Errorf("allowlist without a proxy accepted")
	}
	start := func(context.Context, netip.Addr) (backend.Egress, error) { return backend.Egress{}, nil }
	extra, err := r.Derive(sec, backend.Policy{Network: backend.NetworkPolicy{Mode: backend.NetworkAllowlist, Proxy: start}})
	if err != nil || sec.Network != backend.NetworkAllowlist || len(extra) != 1 {
		t.Errorf("allowlist: network %q, options %v, err %v", sec.Network, extra, err)
	}
	if _, ok := extra[0].(kubernetes.Option); !ok {
		t.Errorf("allowlist's option is a %T, not a kubernetes.Option", extra[0])
	}
}
