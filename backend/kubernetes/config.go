package kubernetes

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/airlock-dev/airlock/backend"
)

// Config is the [environment.kubernetes] section. Start from DefaultConfig.
type Config struct {
	// Kubeconfig is the kubeconfig file; empty means in-cluster, then KUBECONFIG, then
	// ~/.kube/config, as client-go's loading rules do.
	Kubeconfig string `toml:"kubeconfig"`
	// Context is the kubeconfig context; empty means its current one.
	Context string `toml:"context"`
	// Namespace is where pods are made; empty means the context's namespace, then "default".
	Namespace string `toml:"namespace"`
	// Image is the image commands run in.
	Image string `toml:"image"`
	// PullPolicy is the container's imagePullPolicy: IfNotPresent, Always or Never.
	PullPolicy string `toml:"pull_policy"`
	// Workdir is the workspace inside the pod.
	Workdir string `toml:"workdir"`
	// WorkspaceVolume is what holds the workspace: "emptyDir" (the default), whose files
	// live as long as the pod, or "pvc", a PersistentVolumeClaim per session, whose files
	// outlive a pod that is replaced.
	WorkspaceVolume string `toml:"workspace_volume"`
	// StorageClass is the workspace claim's storageClassName (with WorkspaceVolume "pvc");
	// empty means the cluster's default class.
	StorageClass string `toml:"storage_class"`
	// CPURequest, CPULimit, MemoryRequest and MemoryLimit are Kubernetes quantities.
	CPURequest    string `toml:"cpu_request"`
	CPULimit      string `toml:"cpu_limit"`
	MemoryRequest string `toml:"memory_request"`
	MemoryLimit   string `toml:"memory_limit"`
	// WorkspaceSize bounds the workspace (the emptyDir's size limit, or the claim's storage
	// request); TmpSize bounds the /tmp emptyDir.
	WorkspaceSize string `toml:"workspace_size"`
	TmpSize       string `toml:"tmp_size"`
	// RuntimeClass is the pod's runtimeClassName (gVisor, Kata); empty means the default.
	RuntimeClass string `toml:"runtime_class"`
	// ServiceAccount is the pod's service account; its token is never mounted. Empty means
	// the namespace's default account.
	ServiceAccount string `toml:"service_account"`
	// NodeSelector and Tolerations place the pods.
	NodeSelector map[string]string `toml:"node_selector"`
	Tolerations  []Toleration      `toml:"tolerations"`
	// IdleTTL is how long a session's pod may stay unused before gc removes it.
	IdleTTL backend.Duration `toml:"idle_ttl"`
	// WarmPool is how many running pods, helper started, to keep ready for new sessions
	// without a name (0 to backend.MaxWarmPool; see pool.go).
	WarmPool int `toml:"warm_pool"`
	// PodStartTimeout bounds every wait for the API: a pod scheduled and running, deleted.
	PodStartTimeout backend.Duration `toml:"pod_start_timeout"`
	// NetworkPolicyEnforcement says how Airlock knows the cluster enforces NetworkPolicy,
	// which [network] mode "none" relies on: "detect" (prove it with a probe), "assume"
	// (the operator says so) or "off" (it does not: refuse mode "none").
	NetworkPolicyEnforcement string `toml:"network_policy_enforcement"`
	// HelperBinary is a static linux airlock binary copied into the pod; empty means the
	// running executable. A file may give it under its former name, agent_binary (see the
	// record's Renamed).
	HelperBinary string `toml:"helper_binary"`
	// OldKeys holds the notes on keys the file gave under a former name, for Describe.
	backend.OldKeys

	// The fields below come from the general [environment] and [network] sections.

	// Network is [network] mode: "none" or "open".
	Network backend.NetworkMode `toml:"-"`
	Session string              `toml:"-"`
	// PoolMember makes the pod a warm-pool member: labelled as one, no session's until
	// [Env.Claim] relabels it.
	PoolMember     bool          `toml:"-"`
	DefaultTimeout time.Duration `toml:"-"`
	MaxOutputBytes int64         `toml:"-"`
	EnvPassthrough []string      `toml:"-"`
	KillGrace      time.Duration `toml:"-"`
}

// Toleration is one pod toleration.
type Toleration struct {
	Key      string `toml:"key"`
	Operator string `toml:"operator"`
	Value    string `toml:"value"`
	Effect   string `toml:"effect"`
}

// What holds the workspace (workspace_volume).
const (
	VolumeEmptyDir = "emptyDir"
	VolumePVC      = "pvc"
)

// Ways to know NetworkPolicy is enforced.
const (
	EnforceDetect = "detect"
	EnforceAssume = "assume"
	EnforceOff    = "off"
)

// DefaultConfig returns the hardened defaults.
func DefaultConfig() Config {
	return Config{
		PullPolicy:               "IfNotPresent",
		Workdir:                  "/workspace",
		WorkspaceVolume:          VolumeEmptyDir,
		CPURequest:               "100m",
		CPULimit:                 "1",
		MemoryRequest:            "64Mi",
		MemoryLimit:              "1Gi",
		WorkspaceSize:            "1Gi",
		TmpSize:                  "256Mi",
		IdleTTL:                  backend.Duration(30 * time.Minute),
		PodStartTimeout:          backend.Duration(2 * time.Minute),
		NetworkPolicyEnforcement: EnforceDetect,
		Network:                  backend.NetworkNone,
		DefaultTimeout:           backend.DefaultTimeout,
		MaxOutputBytes:           backend.DefaultMaxOutputBytes,
		EnvPassthrough:           backend.DefaultPassthrough,
		KillGrace:                backend.DefaultKillGrace,
	}
}

// withDefaults fills the zero fields that have a non-zero default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	for _, f := range []struct {
		p *string
		v string
	}{
		{&c.PullPolicy, d.PullPolicy}, {&c.Workdir, d.Workdir}, {&c.CPURequest, d.CPURequest},
		{&c.CPULimit, d.CPULimit}, {&c.MemoryRequest, d.MemoryRequest}, {&c.MemoryLimit, d.MemoryLimit},
		{&c.WorkspaceSize, d.WorkspaceSize}, {&c.TmpSize, d.TmpSize}, {&c.WorkspaceVolume, d.WorkspaceVolume},
		{&c.NetworkPolicyEnforcement, d.NetworkPolicyEnforcement},
	} {
		if *f.p == "" {
			*f.p = f.v
		}
	}
	if c.Network == "" {
		c.Network = d.Network
	}
	if c.IdleTTL == 0 {
		c.IdleTTL = d.IdleTTL
	}
	if c.PodStartTimeout == 0 {
		c.PodStartTimeout = d.PodStartTimeout
	}
	if c.DefaultTimeout == 0 {
		c.DefaultTimeout = d.DefaultTimeout
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = d.MaxOutputBytes
	}
	if c.EnvPassthrough == nil {
		c.EnvPassthrough = d.EnvPassthrough
	}
	if c.KillGrace == 0 {
		c.KillGrace = d.KillGrace
	}
	return c
}

const key = "environment.kubernetes."

var labelKeyRE = regexp.MustCompile(`^([a-z0-9.-]+/)?[A-Za-z0-9]([A-Za-z0-9_.-]*[A-Za-z0-9])?$`)

// Validate reports every key that cannot work, each error naming the key.
func (c Config) Validate() error {
	var errs []error
	bad := func(k, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s%s: %s", key, k, fmt.Sprintf(format, args...)))
	}
	if c.Image == "" {
		bad("image", "required: the image commands run in")
	}
	switch c.PullPolicy {
	case "IfNotPresent", "Always", "Never":
	default:
		bad("pull_policy", "want IfNotPresent, Always or Never, got %q", c.PullPolicy)
	}
	if !path.IsAbs(c.Workdir) || path.Clean(c.Workdir) == "/" || path.Clean(c.Workdir) == "/tmp" || path.Clean(c.Workdir) == helperDir {
		bad("workdir", "must be an absolute path below / other than /tmp and %s, got %q", helperDir, c.Workdir)
	}
	for _, q := range []struct{ k, v string }{
		{"cpu_request", c.CPURequest}, {"cpu_limit", c.CPULimit}, {"memory_request", c.MemoryRequest},
		{"memory_limit", c.MemoryLimit}, {"workspace_size", c.WorkspaceSize}, {"tmp_size", c.TmpSize},
	} {
		v, err := resource.ParseQuantity(q.v)
		if err != nil {
			bad(q.k, "%q is not a Kubernetes quantity (such as \"500m\" or \"1Gi\")", q.v)
		} else if v.Sign() <= 0 {
			bad(q.k, "must be above 0: a pod always has limits")
		}
	}
	switch {
	case c.WorkspaceVolume != VolumeEmptyDir && c.WorkspaceVolume != VolumePVC:
		bad("workspace_volume", "want %q or %q, got %q", VolumeEmptyDir, VolumePVC, c.WorkspaceVolume)
	case c.WorkspaceVolume == VolumePVC && c.WarmPool > 0:
		bad("workspace_volume", `"pvc" makes a claim per session, which a warm pool's pods, made before their session is known, cannot have: set warm_pool = 0, or workspace_volume = %q`, VolumeEmptyDir)
	case c.StorageClass != "" && c.WorkspaceVolume != VolumePVC:
		bad("storage_class", `only with workspace_volume = %q: an emptyDir has no storage class`, VolumePVC)
	}
	c.validatePlacement(bad)
	switch c.NetworkPolicyEnforcement {
	case EnforceDetect, EnforceAssume, EnforceOff:
	default:
		bad("network_policy_enforcement", "want detect, assume or off, got %q", c.NetworkPolicyEnforcement)
	}
	switch c.Network {
	case backend.NetworkNone, backend.NetworkOpen, backend.NetworkAllowlist:
	default:
		errs = append(errs, fmt.Errorf("[network] mode %q: the kubernetes backend gives none, allowlist or open", c.Network))
	}
	if c.deniesEgress() && c.NetworkPolicyEnforcement == EnforceOff {
		errs = append(errs, fmt.Errorf(key+`network_policy_enforcement = "off" says the cluster does not enforce NetworkPolicy, so [network] mode %q cannot hold: pods would reach the network; use a network plugin that enforces it (Calico, Cilium), or set [network] mode = "open" knowingly`, c.Network))
	}
	if err := c.validatePool(); err != nil {
		errs = append(errs, err)
	}
	if c.PodStartTimeout.D() <= 0 {
		bad("pod_start_timeout", "must be above 0: every wait has a deadline")
	}
	return errors.Join(errs...)
}

// complaint records that key k (below environment.kubernetes) cannot work, and why.
type complaint func(k, format string, args ...any)

// validatePlacement checks where pods go and under which names: the namespace, runtime
// class, service account and storage class as Kubernetes names, the node selector's labels
// and the tolerations' operators and effects.
func (c Config) validatePlacement(bad complaint) {
	for _, n := range []struct{ k, v string }{{"namespace", c.Namespace}, {"runtime_class", c.RuntimeClass}, {"service_account", c.ServiceAccount}, {"storage_class", c.StorageClass}} {
		if n.v == "" {
			continue
		}
		if msgs := validation.IsDNS1123Subdomain(n.v); len(msgs) > 0 {
			bad(n.k, "%q is not a valid name: %s", n.v, msgs[0])
		}
	}
	for k, v := range c.NodeSelector {
		if !labelKeyRE.MatchString(k) || len(validation.IsValidLabelValue(v)) > 0 {
			bad("node_selector", "%q = %q is not a valid label selector", k, v)
		}
	}
	for i, t := range c.Tolerations {
		switch t.Operator {
		case "", "Equal", "Exists":
		default:
			bad(fmt.Sprintf("tolerations[%d].operator", i), "want Equal or Exists, got %q", t.Operator)
		}
		switch t.Effect {
		case "", "NoSchedule", "PreferNoSchedule", "NoExecute":
		default:
			bad(fmt.Sprintf("tolerations[%d].effect", i), "want NoSchedule, PreferNoSchedule or NoExecute, got %q", t.Effect)
		}
	}
}

// Resolve makes the section's host paths absolute.
func (c *Config) Resolve(abs func(string) string) {
	if c.Kubeconfig != "" {
		c.Kubeconfig = abs(expandHome(c.Kubeconfig))
	}
	if c.HelperBinary != "" {
		c.HelperBinary = abs(c.HelperBinary)
	}
}

func expandHome(p string) string {
	if len(p) >= 2 && p[:2] == "~/" {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, p[2:])
		}
	}
	return p
}

var _ backend.Resolver = (*Config)(nil)

// validatePool checks warm_pool: the record's Validate, at config load, as well as New.
func (c *Config) validatePool() error {
	if c.WarmPool < 0 || c.WarmPool > backend.MaxWarmPool {
		return fmt.Errorf("%swarm_pool: want 0 to %d ready pods, got %d", key, backend.MaxWarmPool, c.WarmPool)
	}
	return nil
}

// PoolSize is environment.kubernetes.warm_pool.
func (c *Config) PoolSize() int { return c.WarmPool }

// SetPoolSize sets warm_pool. Every session without a name has a pod of its own already, so
// nothing else changes.
func (c *Config) SetPoolSize(n int) { c.WarmPool = n }

var _ backend.Pooled = (*Config)(nil)
