package kubernetes_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/kubernetes"
)

// TestHardenedSpecStored reads back what the API server stored for a session's pod and its
// NetworkPolicy, and what the kernel says inside the pod.
func TestHardenedSpecStored(t *testing.T) {
	cs, ns := client(t)
	cfg := testConfig(t)
	// The test cluster does not enforce NetworkPolicy; the policy object is what is checked
	// here (TestNetworkNoneDetect covers enforcement).
	cfg.Network, cfg.NetworkPolicyEnforcement = backend.NetworkNone, kubernetes.EnforceAssume
	env := newEnv(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := cs.CoreV1().Pods(ns).Get(ctx, env.PodName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := p.Spec
	check := func(what string, ok bool) {
		t.Helper()
		if !ok {
			t.Errorf("stored pod: %s does not hold", what)
		}
	}
	check("automountServiceAccountToken false", s.AutomountServiceAccountToken != nil && !*s.AutomountServiceAccountToken)
	check("enableServiceLinks false", s.EnableServiceLinks != nil && !*s.EnableServiceLinks)
	check("no host namespaces", !s.HostNetwork && !s.HostPID && !s.HostIPC)
	psc := s.SecurityContext
	check("pod runAsNonRoot with a fixed uid", psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot && psc.RunAsUser != nil && *psc.RunAsUser == 65532)
	check("pod seccomp RuntimeDefault", psc != nil && psc.SeccompProfile != nil && psc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault)
	if len(s.Containers) != 1 {
		t.Fatalf("%d containers", len(s.Containers))
	}
	c := s.Containers[0]
	sc := c.SecurityContext
	check("allowPrivilegeEscalation false", sc != nil && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation)
	check("readOnlyRootFilesystem", sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem)
	check("drop ALL capabilities, add none", sc != nil && sc.Capabilities != nil && len(sc.Capabilities.Drop) == 1 && sc.Capabilities.Drop[0] == "ALL" && len(sc.Capabilities.Add) == 0)
	check("not privileged", sc.Privileged == nil || !*sc.Privileged)
	check("cpu and memory limits", !c.Resources.Limits.Cpu().IsZero() && !c.Resources.Limits.Memory().IsZero())
	check("no env and no envFrom", len(c.Env) == 0 && len(c.EnvFrom) == 0)
	for _, v := range s.Volumes {
		check("volume "+v.Name+" is an emptyDir with a size limit", v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil)
	}
	for _, k := range []string{"airlock.dev/owner", "airlock.dev/session", "airlock.dev/fingerprint"} {
		check("label "+k, p.Labels[k] != "")
	}

	np, err := cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, env.PodName(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("network policy: %v", err)
	}
	types := map[networkingv1.PolicyType]bool{}
	for _, pt := range np.Spec.PolicyTypes {
		types[pt] = true
	}
	check("policy denies all egress and ingress", types[networkingv1.PolicyTypeEgress] && types[networkingv1.PolicyTypeIngress] &&
		len(np.Spec.Egress) == 0 && len(np.Spec.Ingress) == 0)
	check("policy selects the pod", np.Spec.PodSelector.MatchLabels["airlock.dev/pod"] == p.Labels["airlock.dev/pod"] && p.Labels["airlock.dev/pod"] != "")

	// What the kernel says inside.
	status := sh(t, env, "id -u; id -g; grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status")
	for _, want := range []string{"65532\n65532", "CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2"} {
		if !strings.Contains(status, want) {
			t.Errorf("inside the pod: want %q in\n%s", want, status)
		}
	}
	res := mustExec(t, env, backend.Request{Command: "touch /planted-in-root"})
	if res.ExitCode == 0 {
		t.Errorf("the root filesystem is writable")
	}
	sh(t, env, "touch /workspace/ok /tmp/ok")
	if ls := sh(t, env, "ls /var/run/secrets/kubernetes.io 2>&1 || true"); !strings.Contains(ls, "No such file") {
		t.Errorf("service account files in the pod: %s", ls)
	}
}

// TestHostSecretNeverInPod: a secret in Airlock's own environment reaches neither the pod the
// API server stored, nor any process in the pod, nor a command.
func TestHostSecretNeverInPod(t *testing.T) {
	const marker = "airlock-k8s-secret-marker-7f3a"
	t.Setenv("AIRLOCK_TEST_API_TOKEN", marker)
	t.Setenv("PLAIN_LOOKING_SETTING", marker)
	cs, ns := client(t)
	cfg := testConfig(t)
	env := newEnv(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := cs.CoreV1().Pods(ns).Get(ctx, env.PodName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := json.Marshal(p)
	if strings.Contains(string(stored), marker) {
		t.Errorf("the stored pod holds the host's secret")
	}
	out := sh(t, env, "env; cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'")
	if strings.Contains(out, marker) {
		t.Errorf("the host's secret is in the pod:\n%s", out)
	}
	if !strings.Contains(out, "PATH=") {
		t.Errorf("the commands' environment was not read:\n%s", out)
	}
}
