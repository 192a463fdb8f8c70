package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/airlock-dev/airlock/backend"
)

// GC deletes the Airlock pods of the section's namespace that nobody will use again, among
// those the calling user made on this host unless opts.AllOwners:
//
//   - pods that ended (evicted, their node lost, their container exited) and are older
//     than MinAge;
//   - pods of an unnamed session whose creating process, on this host, is gone (checked by
//     PID and start time, so a reused PID does not count): a SIGKILLed airlock;
//   - warm-pool pods (labelPool) of such a process; those of a live process on this host are
//     kept however long they wait;
//   - pods unused for longer than their idle TTL (the last-use annotation, kept up to date
//     while commands run, and set when a warm-pool pod is claimed).
//
// The NetworkPolicy and workspace claim of each deleted pod go with it, and so does any
// Airlock policy or claim whose pod is gone.
func GC(ctx context.Context, c Config, opts backend.GCOptions) ([]backend.GCItem, error) {
	c = c.withDefaults()
	cl, err := connect(c)
	if errors.Is(err, errNoCluster) {
		// No cluster is configured for this user at all: none can hold a pod of theirs.
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if opts.MinAge == 0 {
		opts.MinAge = time.Minute
	}
	lctx, cancel := context.WithTimeout(ctx, apiTimeout)
	list, err := cl.pods().List(lctx, metav1.ListOptions{LabelSelector: labelOwner + "=" + ownerValue})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("kubernetes: list pods in %s at %s: %w", cl.namespace, cl.host, err)
	}
	hostname, _ := os.Hostname()
	me := "uid " + strconv.Itoa(os.Getuid()) + " on " + hostname
	now := time.Now()
	var items []backend.GCItem
	alive := map[string]bool{}
	for i := range list.Items {
		p := &list.Items[i]
		owner := "uid " + p.Annotations[annUID] + " on " + p.Annotations[annHostname]
		if !opts.AllOwners && owner != me {
			alive[p.Name] = true
			items = append(items, backend.GCItem{ID: string(p.UID), Name: p.Name, State: string(p.Status.Phase), OtherOwner: owner})
			continue
		}
		reason := gcReason(p, opts, hostname, now)
		if reason == "" {
			alive[p.Name] = true
			continue
		}
		it := backend.GCItem{ID: string(p.UID), Name: cl.namespace + "/" + p.Name, State: string(p.Status.Phase), Reason: reason}
		if !opts.DryRun {
			it.Err = gcDelete(ctx, cl, p)
			it.Removed = it.Err == nil
		}
		items = append(items, it)
	}
	items = append(items, gcPolicies(ctx, cl, alive, opts)...)
	return append(items, gcClaims(ctx, cl, alive, opts)...), nil
}

// gcReason says why p may be deleted, or "" to keep it.
func gcReason(p *corev1.Pod, opts backend.GCOptions, hostname string, now time.Time) string {
	if opts.All {
		return "--all"
	}
	a := p.Annotations
	age := now.Sub(p.CreationTimestamp.Time)
	if (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) && age >= opts.MinAge {
		return "ended (" + string(p.Status.Phase) + " " + p.Status.Reason + ")"
	}
	if a[annReuse] != "true" && a[annHostname] == hostname {
		pid, err := strconv.Atoi(a[annPID])
		switch {
		case err == nil && !processAlive(pid, a[annPIDStart]) && p.Labels[labelPool] == poolMember:
			return "warm-pool pod of a process that is gone (" + a[annPID] + ")"
		case err == nil && !processAlive(pid, a[annPIDStart]):
			return "its session ended (process " + a[annPID] + " is gone)"
		case p.Labels[labelPool] == poolMember:
			return "" // ready in a live process's pool: not idle, waiting
		}
	}
	ttl, err := time.ParseDuration(a[annIdleTTL])
	if err != nil || ttl <= 0 {
		return ""
	}
	last := p.CreationTimestamp.Time
	if t, err := time.Parse(time.RFC3339, a[annLastUse]); err == nil && t.After(last) {
		last = t
	}
	if idle := now.Sub(last); idle > ttl {
		return fmt.Sprintf("idle for %s (idle TTL %s)", idle.Round(time.Second), ttl)
	}
	return ""
}

func gcDelete(ctx context.Context, cl *cluster, p *corev1.Pod) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	err := cl.pods().Delete(ctx, p.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0), Preconditions: metav1.NewUIDPreconditions(string(p.UID)),
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kubernetes: delete pod %s/%s: %w", cl.namespace, p.Name, err)
	}
	err = cl.policies().Delete(ctx, p.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kubernetes: delete network policy %s/%s: %w", cl.namespace, p.Name, err)
	}
	return nil
}

// gcPolicies deletes Airlock network policies whose pod is gone.
func gcPolicies(ctx context.Context, cl *cluster, alive map[string]bool, opts backend.GCOptions) []backend.GCItem {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	policies := cl.policies()
	list, err := policies.List(ctx, metav1.ListOptions{LabelSelector: labelOwner + "=" + ownerValue})
	if err != nil {
		return []backend.GCItem{{Name: "network policies in " + cl.namespace, Err: err}}
	}
	var objs []podObject
	for _, np := range list.Items {
		objs = append(objs, podObject{meta: np.ObjectMeta, pod: np.Name})
	}
	return gcPodObjects(ctx, "networkpolicy "+cl.namespace+"/", objs, alive, opts, func(ctx context.Context, m metav1.ObjectMeta) error {
		return policies.Delete(ctx, m.Name, metav1.DeleteOptions{})
	})
}

// podObject is an Airlock object that lives as long as its pod: a pod's NetworkPolicy, a
// session's workspace claim.
type podObject struct {
	meta metav1.ObjectMeta
	pod  string // the name of the pod it belongs to
}

// gcPodObjects deletes those of objs whose pod is not alive, once older than opts.MinAge
// (or all of them with opts.All), naming each with prefix.
func gcPodObjects(ctx context.Context, prefix string, objs []podObject, alive map[string]bool, opts backend.GCOptions, del func(context.Context, metav1.ObjectMeta) error) []backend.GCItem {
	var items []backend.GCItem
	for _, o := range objs {
		if alive[o.pod] || time.Since(o.meta.CreationTimestamp.Time) < opts.MinAge && !opts.All {
			continue
		}
		it := backend.GCItem{ID: string(o.meta.UID), Name: prefix + o.meta.Name, Reason: "its pod is gone"}
		if !opts.DryRun {
			if err := del(ctx, o.meta); err != nil && !apierrors.IsNotFound(err) {
				it.Err = err
			}
			it.Removed = it.Err == nil
		}
		items = append(items, it)
	}
	return items
}

// processAlive reports whether pid runs on this host and, when start is known, is the
// process that created the pod.
func processAlive(pid int, start string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return start == "" || processStart(pid) == start
}
