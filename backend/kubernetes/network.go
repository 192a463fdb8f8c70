package kubernetes

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/airlock-dev/airlock/backend"
)

// enforcement remembers, per API server and namespace, what a probe proved about
// NetworkPolicy, so that one process probes once.
var enforcement sync.Map // host|namespace -> string (a note: proved)

func (e *Env) enforcementKey() string { return e.cl.host + "|" + e.cl.namespace }

// policyFirst reports whether the NetworkPolicy is made before the pod. Only a pod that must
// prove enforcement runs a moment without it: its control probe needs the way out open.
func (e *Env) policyFirst() bool {
	if !e.cfg.deniesEgress() || e.cfg.NetworkPolicyEnforcement != EnforceDetect {
		return true
	}
	_, known := enforcement.Load(e.enforcementKey())
	return known
}

// networkPolicy denies the pod every ingress and, in [network] mode none or allowlist, every
// egress.
func (e *Env) networkPolicy() *networkingv1.NetworkPolicy {
	types := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	if e.cfg.deniesEgress() {
		types = append(types, networkingv1.PolicyTypeEgress)
	}
	return &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: e.name, Namespace: e.cl.namespace,
			Labels: map[string]string{labelOwner: ownerValue, labelSession: labelValue(e.session), labelPod: e.name}},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{labelPod: e.name}},
			PolicyTypes: types,
		},
	}
}

func (e *Env) ensureNetworkPolicy(ctx context.Context) error {
	if !e.policyFirst() {
		return nil
	}
	return e.createNetworkPolicy(ctx)
}

func (e *Env) createNetworkPolicy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	_, err := e.cl.policies().Create(ctx, e.networkPolicy(), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return e.apiErr("create network policy", err)
	}
	return nil
}

func (e *Env) deleteNetworkPolicy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	err := e.cl.policies().Delete(ctx, e.name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return e.apiErr("delete network policy", err)
	}
	return nil
}

// checkNetwork makes sure [network] holds in the pod and records how for Describe. Modes
// none and allowlist rest on the NetworkPolicy, which only some network plugins enforce (a
// plain bridge plugin ignores it): with "detect" the first pod proves it — the API server is
// reachable from the pod before its deny-all policy and not after — and a pod that cannot
// prove it is refused.
func (e *Env) checkNetwork(ctx context.Context, pod string) error {
	note := ""
	switch {
	case e.cfg.Network == backend.NetworkOpen:
		note = "the pod has network access ([network] mode \"open\"); NetworkPolicy " + e.name + " denies ingress"
	case e.cfg.NetworkPolicyEnforcement == EnforceAssume:
		note = "NetworkPolicy " + e.name + " denies all egress and ingress; the cluster is assumed to enforce NetworkPolicy (environment.kubernetes.network_policy_enforcement = \"assume\"), which was not checked"
	default:
		if v, ok := enforcement.Load(e.enforcementKey()); ok {
			note = v.(string)
			break
		}
		proved, err := e.detectEnforcement(ctx, pod)
		if err != nil {
			return err
		}
		enforcement.Store(e.enforcementKey(), proved)
		note = proved
	}
	if e.cfg.Network == backend.NetworkAllowlist {
		note += "; commands reach Airlock's egress proxy, which decides each request, only through the resident helper's exec stream (HTTP(S)_PROXY names the helper's port on the pod's loopback)"
	}
	e.mu.Lock()
	e.netNote = note
	e.mu.Unlock()
	return nil
}

// detectEnforcement probes from the pod: the API server must answer before the deny-all
// policy exists (the control) and stop answering once it does.
func (e *Env) detectEnforcement(ctx context.Context, pod string) (string, error) {
	target, err := probeTarget(e.cl.host)
	if err != nil {
		return "", err
	}
	before, why := e.probe(ctx, pod, target)
	if err := e.createNetworkPolicy(ctx); err != nil {
		return "", err
	}
	refuse := func(what string) error {
		return fmt.Errorf(`kubernetes: [network] mode %q needs NetworkPolicy enforced, and %s; a plain bridge network plugin ignores NetworkPolicy, so pods would keep their network. Use a network plugin that enforces it (Calico, Cilium), or set environment.kubernetes.network_policy_enforcement = "assume" if you know the cluster enforces it, or [network] mode = "open" knowingly`, e.cfg.Network, what)
	}
	if !before {
		return "", refuse(fmt.Sprintf("it cannot be proved here: the control probe from pod %s could not reach the API server at %s even without a policy (%s)", pod, target, why))
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		after, _ := e.probe(ctx, pod, target)
		if !after {
			return fmt.Sprintf("NetworkPolicy is enforced: a probe from pod %s reached the API server at %s before its deny-all egress policy and not after (network_policy_enforcement = \"detect\")", pod, target), nil
		}
		if time.Now().After(deadline) {
			return "", refuse(fmt.Sprintf("this cluster does not enforce it: pod %s still reached the API server at %s 5 s after a deny-all egress NetworkPolicy was applied", pod, target))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// probe reports whether the pod reaches target, and if not, why.
func (e *Env) probe(ctx context.Context, pod, target string) (bool, string) {
	host, port, _ := net.SplitHostPort(target)
	res, err := e.rawExec(ctx, pod, []string{"nc", "-w", "2", host, port}, nil)
	switch {
	case err != nil:
		return false, err.Error()
	case res.ExitCode == 127 || res.ExitCode == 126:
		return false, "the image has no nc to probe with"
	case res.ExitCode != 0:
		return false, fmt.Sprintf("nc exited %d: %s", res.ExitCode, res.Stderr)
	}
	return true, ""
}

// probeTarget is the API server's host:port from the client's URL.
func probeTarget(host string) (string, error) {
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("kubernetes: cannot tell the API server's address from %q to probe NetworkPolicy", host)
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "443"), nil
	}
	return u.Host, nil
}

// runtimeClassNote says whether the configured runtime class exists, for Describe.
func (e *Env) runtimeClassNote() string {
	if e.cfg.RuntimeClass == "" {
		return "runtime class: the cluster's default (environment.kubernetes.runtime_class is unset)"
	}
	ctx, cancel := context.WithTimeout(e.rep.Life(), 5*time.Second)
	defer cancel()
	rc, err := e.cl.runtimeClasses().Get(ctx, e.cfg.RuntimeClass, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "runtime class " + e.cfg.RuntimeClass + " does not exist in the cluster"
	case err != nil:
		return "runtime class " + e.cfg.RuntimeClass + ": unknown (" + err.Error() + ")"
	}
	return "runtime class " + rc.Name + " exists (handler " + rc.Handler + ")"
}
