package kubernetes

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/airlock-dev/airlock/backend"
)

// The workspace on a PersistentVolumeClaim (workspace_volume = "pvc"). The claim is the
// session's: named and labelled after its pod, made before the pod, kept when the pod is
// replaced (evicted, its node lost, deleted from outside), so a repaired session keeps its
// files, and deleted with the pod when the session ends. gc deletes a claim whose pod is
// gone, as it does the pod's NetworkPolicy.

// workspaceSource is the workspace volume of a configuration. A claim's name is the pod's,
// known once the fingerprint is (see [withClaim]).
func workspaceSource(c Config) corev1.VolumeSource {
	if c.WorkspaceVolume == VolumePVC {
		return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{}}
	}
	size := resource.MustParse(c.WorkspaceSize)
	return corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &size}}
}

// withClaim names the workspace claim in spec: the pod's own name.
func withClaim(spec corev1.PodSpec, name string) corev1.PodSpec {
	vols := append([]corev1.Volume(nil), spec.Volumes...)
	for i := range vols {
		if vols[i].Name == "workspace" && vols[i].PersistentVolumeClaim != nil {
			pvc := *vols[i].PersistentVolumeClaim
			pvc.ClaimName = name
			vols[i].PersistentVolumeClaim = &pvc
		}
	}
	spec.Volumes = vols
	return spec
}

// usesClaim reports whether the workspace is on a claim.
func (e *Env) usesClaim() bool { return e.cfg.WorkspaceVolume == VolumePVC }

// claimObject is the session's workspace claim.
func (e *Env) claimObject() *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: e.name, Namespace: e.cl.namespace,
			Labels: map[string]string{labelOwner: ownerValue, labelSession: labelValue(e.session), labelPod: e.name}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(e.cfg.WorkspaceSize)},
			},
		},
	}
	if e.cfg.StorageClass != "" {
		pvc.Spec.StorageClassName = ptr.To(e.cfg.StorageClass)
	}
	return pvc
}

// ensureClaim makes the session's workspace claim unless it exists. A claim of the same
// name that Airlock did not make is refused, as a pod would be.
func (e *Env) ensureClaim(ctx context.Context) error {
	if !e.usesClaim() {
		return nil
	}
	claims := e.cl.claims()
	actx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	_, err := claims.Create(actx, e.claimObject(), metav1.CreateOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return e.apiErr("create workspace claim", err)
	}
	old, err := claims.Get(actx, e.name, metav1.GetOptions{})
	if err != nil {
		return e.apiErr("get workspace claim", err)
	}
	if old.Labels[labelOwner] != ownerValue || old.Labels[labelPod] != e.name {
		return fmt.Errorf("kubernetes: persistentvolumeclaim %s/%s is not one airlock made for this session; delete it or use another namespace", e.cl.namespace, e.name)
	}
	if old.DeletionTimestamp != nil {
		return e.waitClaimGone(ctx)
	}
	return nil
}

// waitClaimGone waits, within pod_start_timeout, for a claim being deleted to go, then
// makes it again: a claim in deletion cannot be mounted.
func (e *Env) waitClaimGone(ctx context.Context) error {
	claims := e.cl.claims()
	ctx, cancel := context.WithTimeout(ctx, e.cfg.PodStartTimeout.D())
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, apiTimeout)
		_, err := claims.Get(actx, e.name, metav1.GetOptions{})
		acancel()
		if apierrors.IsNotFound(err) {
			return e.ensureClaim(ctx)
		}
		select {
		case <-ctx.Done():
			return e.apiErr("wait for the old workspace claim to go", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// deleteClaim deletes the session's workspace claim; the volume's reclaim policy decides
// what becomes of the data.
func (e *Env) deleteClaim(ctx context.Context) error {
	if !e.usesClaim() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	err := e.cl.claims().Delete(ctx, e.name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return e.apiErr("delete workspace claim", err)
	}
	return nil
}

// workspaceFate is what the notes of a recreated environment say of the workspace's files.
func (e *Env) workspaceFate() string {
	if e.usesClaim() {
		return "files in the workspace are kept: they are on PersistentVolumeClaim " + e.name
	}
	return "files in the workspace are lost"
}

// gcClaims deletes Airlock workspace claims whose pod is gone.
func gcClaims(ctx context.Context, cl *cluster, alive map[string]bool, opts backend.GCOptions) []backend.GCItem {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	claims := cl.claims()
	list, err := claims.List(ctx, metav1.ListOptions{LabelSelector: labelOwner + "=" + ownerValue})
	if err != nil {
		return []backend.GCItem{{Name: "persistentvolumeclaims in " + cl.namespace, Err: err}}
	}
	var objs []podObject
	for _, c := range list.Items {
		objs = append(objs, podObject{meta: c.ObjectMeta, pod: c.Labels[labelPod]})
	}
	return gcPodObjects(ctx, "persistentvolumeclaim "+cl.namespace+"/", objs, alive, opts, func(ctx context.Context, m metav1.ObjectMeta) error {
		return claims.Delete(ctx, m.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(m.UID))})
	})
}
