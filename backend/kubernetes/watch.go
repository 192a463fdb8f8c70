package kubernetes

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// watchPod follows the session's pod for as long as the Env lives. A pod deleted (even
// forcibly, while its container still runs for a moment), evicted or ended cuts the helper's
// stream at once, so the next call repairs rather than running in a pod that is going away.
// The watch is made again after it breaks (an API-server restart), with a pause.
func (e *Env) watchPod() {
	sel := fields.OneTermEqualSelector("metadata.name", e.name).String()
	for e.rep.Life().Err() == nil {
		w, err := e.cl.pods().Watch(e.rep.Life(), metav1.ListOptions{FieldSelector: sel})
		if err == nil {
			for ev := range w.ResultChan() {
				p, ok := ev.Object.(*corev1.Pod)
				if !ok {
					continue
				}
				if ev.Type == watch.Deleted || p.DeletionTimestamp != nil ||
					p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
					e.podGone(p.UID, string(ev.Type)+" "+string(p.Status.Phase)+" "+p.Status.Reason)
				}
			}
			w.Stop()
		}
		select {
		case <-e.rep.Life().Done():
		case <-time.After(time.Second):
		}
	}
}

// podGone cuts the helper's stream when it runs in the pod with that UID, and tells the
// warm pool an unclaimed member is lost.
func (e *Env) podGone(uid types.UID, what string) {
	e.mu.Lock()
	a, mine := e.resident, e.podUID == uid
	e.mu.Unlock()
	if !mine {
		return
	}
	e.memberLost()
	if a == nil {
		return
	}
	e.log.Info("pod going away", "pod", e.name, "event", what)
	a.cancel()
	if a.client != nil {
		_ = a.client.Close()
	}
}
