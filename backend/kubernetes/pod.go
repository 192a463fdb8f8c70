package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Labels and annotations on every pod this package creates. gc finds pods by labelOwner and
// decides with the annotations.
const (
	labelOwner       = "airlock.dev/owner"
	ownerValue       = "airlock"
	labelSession     = "airlock.dev/session"
	labelFingerprint = "airlock.dev/fingerprint"
	labelPod         = "airlock.dev/pod"
	annIdleTTL       = "airlock.dev/idle-ttl"
	annLastUse       = "airlock.dev/last-use"
	annPID           = "airlock.dev/pid"
	annPIDStart      = "airlock.dev/pid-start"
	annHostname      = "airlock.dev/hostname"
	annUID           = "airlock.dev/uid"
	annReuse         = "airlock.dev/reuse"
)

// The pod's fixed shape.
const (
	containerName = "sandbox"
	// runAsID is the uid and gid everything in the pod runs as: not root, and not an id the
	// image is likely to give a meaning to (distroless's "nonroot").
	runAsID   = 65532
	helperDir = "/.airlock"
	// killGraceSeconds is the pod's termination grace: PID 1 exits on TERM at once.
	killGraceSeconds = 2
)

// pid1 keeps the pod alive and reaps what is reparented to it; it exits on TERM.
var pid1 = []string{"/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 86400 & wait $!; done"}

// podSpec is the pod a configuration describes; its hash, with the session and the helper's
// digest, is the fingerprint.
func podSpec(c Config) (corev1.PodSpec, error) {
	q := func(s string) resource.Quantity { return resource.MustParse(s) }
	tmpSize := q(c.TmpSize)
	helperSize := q("256Mi")
	spec := corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		AutomountServiceAccountToken:  ptr.To(false),
		EnableServiceLinks:            ptr.To(false),
		ServiceAccountName:            c.ServiceAccount,
		NodeSelector:                  c.NodeSelector,
		TerminationGracePeriodSeconds: ptr.To[int64](killGraceSeconds),
		SecurityContext: &corev1.PodSecurityContext{
			// No fsGroup: kubelet would make the emptyDirs setgid, and every directory a command
			// makes would inherit it (2755, where every backend gives 755); they are 0777.
			RunAsUser: ptr.To[int64](runAsID), RunAsGroup: ptr.To[int64](runAsID),
			RunAsNonRoot:   ptr.To(true),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name: containerName, Image: c.Image, ImagePullPolicy: corev1.PullPolicy(c.PullPolicy),
			Command: pid1, WorkingDir: c.Workdir,
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q(c.CPURequest), corev1.ResourceMemory: q(c.MemoryRequest)},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q(c.CPULimit), corev1.ResourceMemory: q(c.MemoryLimit)},
			},
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				Privileged:               ptr.To(false),
				ReadOnlyRootFilesystem:   ptr.To(true),
				RunAsNonRoot:             ptr.To(true),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "workspace", MountPath: c.Workdir},
				{Name: "tmp", MountPath: "/tmp"},
				{Name: "airlock", MountPath: helperDir},
			},
		}},
		Volumes: []corev1.Volume{
			{Name: "workspace", VolumeSource: workspaceSource(c)},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &tmpSize}}},
			{Name: "airlock", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &helperSize}}},
		},
	}
	if c.WorkspaceVolume == VolumePVC {
		// A claim's volume is root's until kubelet gives it to the pod's group, which fsGroup
		// does for the volume types that support it (making the emptyDirs setgid as well).
		spec.SecurityContext.FSGroup = ptr.To[int64](runAsID)
		spec.SecurityContext.FSGroupChangePolicy = ptr.To(corev1.FSGroupChangeOnRootMismatch)
	}
	if c.RuntimeClass != "" {
		spec.RuntimeClassName = ptr.To(c.RuntimeClass)
	}
	for _, t := range c.Tolerations {
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{
			Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value, Effect: corev1.TaintEffect(t.Effect),
		})
	}
	return spec, nil
}

// fingerprint is the SHA-256 of the pod spec, the network mode, the session and the
// helper's digest: the same configuration of the same session finds the same pod.
func fingerprint(spec corev1.PodSpec, c Config, session, helperDigest string) string {
	b, _ := json.Marshal(struct {
		Spec                  corev1.PodSpec
		Network, Session, Bin string
	}{spec, string(c.Network), session, helperDigest})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// podName is the pod's name: the fingerprint, which names the session too.
func podName(fp string) string { return "airlock-" + fp[:20] }

// podObject is the pod to create: a session's, a warm-pool member's (labelPool), or, made
// again by a repair, that of the session that claimed a member.
func (e *Env) podObject() *corev1.Pod {
	host, _ := os.Hostname()
	e.mu.Lock()
	session, member := e.session, e.cfg.PoolMember
	if e.claimedBy != "" {
		session = e.claimedBy
	}
	e.mu.Unlock()
	labels := map[string]string{
		labelOwner: ownerValue, labelSession: labelValue(session),
		labelFingerprint: e.fp[:63], labelPod: e.name,
	}
	if member {
		labels[labelPool] = poolMember
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: e.name, Namespace: e.cl.namespace,
			Labels: labels,
			Annotations: map[string]string{
				annIdleTTL: e.cfg.IdleTTL.D().String(), annLastUse: time.Now().UTC().Format(time.RFC3339),
				annPID: strconv.Itoa(os.Getpid()), annPIDStart: processStart(os.Getpid()),
				annHostname: host, annUID: strconv.Itoa(os.Getuid()), annReuse: strconv.FormatBool(e.cfg.Session != ""),
			},
		},
		Spec: e.spec,
	}
}

// labelValue makes s a valid label value (a session name may hold other characters).
func labelValue(s string) string {
	ok := len(s) <= 63
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			ok = false
		}
	}
	if ok && (s == "" || s[0] != '-' && s[0] != '_' && s[0] != '.') {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "h" + hex.EncodeToString(sum[:])[:40]
}

// ensurePod returns a running pod with this configuration: the existing one when its
// fingerprint matches and it runs, else a new one. note says what was done.
func (e *Env) ensurePod(ctx context.Context) (*corev1.Pod, string, error) {
	pods := e.cl.pods()
	for attempt := 0; attempt < 3; attempt++ {
		actx, cancel := context.WithTimeout(ctx, apiTimeout)
		p, err := pods.Get(actx, e.name, metav1.GetOptions{})
		cancel()
		switch {
		case apierrors.IsNotFound(err):
			if err := e.ensureNetworkPolicy(ctx); err != nil {
				return nil, "", err
			}
			if err := e.ensureClaim(ctx); err != nil {
				return nil, "", err
			}
			actx, cancel := context.WithTimeout(ctx, apiTimeout)
			_, err = pods.Create(actx, e.podObject(), metav1.CreateOptions{})
			cancel()
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			if err != nil {
				return nil, "", e.apiErr("create pod", err)
			}
			p, err := e.waitRunning(ctx)
			return p, "created pod " + e.name, err
		case err != nil:
			return nil, "", e.apiErr("get pod", err)
		}
		if p.Labels[labelOwner] != ownerValue || p.Labels[labelFingerprint] != e.fp[:63] {
			return nil, "", fmt.Errorf("kubernetes: pod %s/%s is not one airlock made for this configuration; delete it or use another namespace", e.cl.namespace, e.name)
		}
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && containerRunning(p) {
			return p, "reused pod " + e.name, nil
		}
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodPending {
			p, err := e.waitRunning(ctx)
			return p, "reused pod " + e.name, err
		}
		// Ended (evicted, its node lost, its container gone) or being deleted: replace it.
		if err := e.deletePod(ctx, p.UID, true); err != nil {
			return nil, "", err
		}
	}
	return nil, "", fmt.Errorf("kubernetes: pod %s/%s keeps changing under us; is another airlock deleting it?", e.cl.namespace, e.name)
}

func containerRunning(p *corev1.Pod) bool {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == containerName {
			return s.State.Running != nil
		}
	}
	return false
}

// waitRunning polls the pod until it runs, fails or pod_start_timeout passes. A pod that
// cannot run is deleted and the error names the cause from its status and events.
func (e *Env) waitRunning(ctx context.Context) (*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.PodStartTimeout.D())
	defer cancel()
	pods := e.cl.pods()
	delay := 50 * time.Millisecond
	var last *corev1.Pod
	for {
		actx, acancel := context.WithTimeout(ctx, apiTimeout)
		p, err := pods.Get(actx, e.name, metav1.GetOptions{})
		acancel()
		switch {
		case apierrors.IsNotFound(err):
			return nil, fmt.Errorf("kubernetes: pod %s/%s was deleted while it started", e.cl.namespace, e.name)
		case err == nil:
			last = p
			if p.Status.Phase == corev1.PodRunning && containerRunning(p) {
				return p, nil
			}
			if why := podFailure(p); why != "" {
				return nil, e.failStart(ctx, p, why)
			}
		case ctx.Err() == nil:
			e.log.Debug("pod get failed while waiting", "error", err)
		}
		select {
		case <-ctx.Done():
			why := "it did not run within environment.kubernetes.pod_start_timeout (" + e.cfg.PodStartTimeout.D().String() + ")"
			if last != nil {
				why += "; phase " + string(last.Status.Phase) + pendingReason(last)
			}
			return nil, e.failStart(context.WithoutCancel(ctx), last, why)
		case <-time.After(delay):
		}
		delay = min(delay*2, 500*time.Millisecond)
	}
}

// podFailure says why a pod cannot run, or "" while it still may: it ended, or its
// container waits for a reason that does not pass by itself.
func podFailure(p *corev1.Pod) string {
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return "it ended (" + string(p.Status.Phase) + ": " + p.Status.Reason + " " + p.Status.Message + ")"
	}
	for _, s := range p.Status.ContainerStatuses {
		if w := s.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImageNeverPull", "InvalidImageName", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
				return "its container cannot start: " + w.Reason + ": " + w.Message
			}
		}
		if t := s.State.Terminated; t != nil {
			return fmt.Sprintf("its container exited (%s, code %d): %s", t.Reason, t.ExitCode, t.Message)
		}
	}
	return ""
}

func pendingReason(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
			return " (not scheduled: " + c.Reason + ": " + c.Message + ")"
		}
	}
	return ""
}

// failStart deletes a pod that cannot run and returns an error naming the cause, with the
// warnings from its events.
func (e *Env) failStart(ctx context.Context, p *corev1.Pod, why string) error {
	msg := fmt.Sprintf("kubernetes: pod %s/%s cannot run: %s", e.cl.namespace, e.name, why)
	if ev := e.podEvents(ctx); ev != "" {
		msg += "; events: " + ev
	}
	err := errors.New(msg)
	if p != nil {
		if derr := e.deletePod(ctx, p.UID, false); derr != nil {
			err = errors.Join(err, derr)
		}
	}
	return err
}

// podEvents lists the pod's warning events, oldest first, deduplicated.
func (e *Env) podEvents(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	sel := fields.Set{"involvedObject.name": e.name, "involvedObject.kind": "Pod"}.AsSelector().String()
	list, err := e.cl.events().List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return ""
	}
	items := list.Items
	sort.Slice(items, func(i, j int) bool { return items[i].LastTimestamp.Before(&items[j].LastTimestamp) })
	var out []string
	seen := map[string]bool{}
	for _, ev := range items {
		if ev.Type != corev1.EventTypeWarning {
			continue
		}
		s := ev.Reason + ": " + ev.Message
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return strings.Join(out, "; ")
}

// deletePod deletes the pod with the given UID (never a successor of the same name) and,
// when wait is set, waits until it is gone, within pod_start_timeout.
func (e *Env) deletePod(ctx context.Context, uid types.UID, wait bool) error {
	pods := e.cl.pods()
	opts := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	if uid != "" {
		opts.Preconditions = metav1.NewUIDPreconditions(string(uid))
	}
	actx, cancel := context.WithTimeout(ctx, apiTimeout)
	err := pods.Delete(actx, e.name, opts)
	cancel()
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return e.apiErr("delete pod", err)
	}
	if !wait {
		return nil
	}
	ctx, cancel = context.WithTimeout(ctx, e.cfg.PodStartTimeout.D())
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, apiTimeout)
		p, err := pods.Get(actx, e.name, metav1.GetOptions{})
		acancel()
		if apierrors.IsNotFound(err) || err == nil && p.UID != uid {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubernetes: pod %s/%s was not gone within pod_start_timeout after its delete", e.cl.namespace, e.name)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// processStart is the start time of a process in clock ticks since boot: with the PID, it
// names a process even after its PID is reused.
func processStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}
