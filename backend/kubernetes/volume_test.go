package kubernetes_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/kubernetes"
)

// localVolume gives the test cluster one volume to claim, as a cluster operator's storage
// would: a StorageClass without a provisioner that binds when the pod is scheduled, and a
// local PersistentVolume of it on a directory of the first node (the nodes share this host's
// filesystem). Both are removed when the test ends. It returns the class's name.
func localVolume(t *testing.T, cs *k8s.Clientset, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("list nodes: %v (%d)", err, len(nodes.Items))
	}
	host := nodes.Items[0].Labels["kubernetes.io/hostname"]
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		ReclaimPolicy:     ptr.To(corev1.PersistentVolumeReclaimRetain),
	}
	if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              name,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{host}}},
			}}}},
		},
	}
	if _, err := cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = cs.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{})
		_ = cs.StorageV1().StorageClasses().Delete(ctx, name, metav1.DeleteOptions{})
	})
	return name
}

// TestWorkspaceClaim: with workspace_volume = "pvc" the workspace is a claim of the
// session's own, owned by the pod's uid. A pod deleted from outside is replaced on the next
// call with the workspace's files still there, and the result says they were kept; Close
// deletes the claim.
func TestWorkspaceClaim(t *testing.T) {
	cs, ns := client(t)
	cfg := testConfig(t)
	cfg.WorkspaceVolume = kubernetes.VolumePVC
	cfg.StorageClass = localVolume(t, cs, ns)
	cfg.WorkspaceSize = "64Mi"
	env := newEnv(t, cfg)
	if out := sh(t, env, "echo kept > /workspace/f && mkdir /workspace/d && stat -c '%u %a' /workspace/d"); !strings.HasPrefix(out, "65532 ") {
		t.Fatalf("a directory the command made in the claimed workspace: %q, want one of uid 65532", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	name := env.PodName()
	pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pvc.Labels["airlock.dev/owner"] != "airlock" || ptr.Deref(pvc.Spec.StorageClassName, "") != cfg.StorageClass || pvc.Status.Phase != corev1.ClaimBound {
		t.Errorf("stored claim: labels %v, class %v, phase %s", pvc.Labels, ptr.Deref(pvc.Spec.StorageClassName, ""), pvc.Status.Phase)
	}
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range pod.Spec.Volumes {
		if v.Name == "workspace" && (v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != name) {
			t.Errorf("the pod's workspace volume: %+v, want claim %s", v.VolumeSource, name)
		}
	}
	if err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	for {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && p.UID != pod.UID {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the pod was not deleted")
		}
		time.Sleep(100 * time.Millisecond)
	}
	res := mustExec(t, env, backend.Request{Command: "echo after; cat /workspace/f"})
	if res.ExitCode != 0 || string(res.Stdout) != "after\nkept\n" {
		t.Fatalf("next call: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if notes := strings.Join(res.Notes, "\n"); !strings.Contains(notes, "environment recreated") || !strings.Contains(notes, "files in the workspace are kept") {
		t.Errorf("the result's notes do not say the pod was recreated with the files kept: %q", res.Notes)
	}
	if err := env.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("Close left the workspace claim")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestGCRemovesOrphanClaim: a workspace claim whose pod is gone (its process died between
// deleting the pod and the claim) is deleted by gc; a claim of a pod that runs is kept.
func TestGCRemovesOrphanClaim(t *testing.T) {
	cs, ns := client(t)
	cfg := testConfig(t)
	live := newEnv(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	claim := func(name, pod string) {
		t.Helper()
		c := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"airlock.dev/owner": "airlock", "airlock.dev/pod": pod}},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}},
			},
		}
		if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	claim("orphan-claim", "airlock-gone-long-ago")
	claim("live-claim", live.PodName())
	t.Cleanup(func() {
		_ = cs.CoreV1().PersistentVolumeClaims(ns).Delete(context.Background(), "live-claim", metav1.DeleteOptions{})
	})
	items, err := kubernetes.GC(ctx, cfg, backend.GCOptions{MinAge: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	removed := map[string]bool{}
	for _, it := range items {
		if it.Err != nil {
			t.Errorf("gc %s: %v", it.Name, it.Err)
		}
		removed[it.Name] = it.Removed
	}
	if !removed["persistentvolumeclaim "+ns+"/orphan-claim"] {
		t.Errorf("gc did not remove the orphan claim: %+v", items)
	}
	if removed["persistentvolumeclaim "+ns+"/live-claim"] {
		t.Error("gc removed the claim of a running pod")
	}
	c, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "orphan-claim", metav1.GetOptions{})
	if err == nil && c.DeletionTimestamp == nil {
		t.Error("the orphan claim is still there after gc")
	}
}
