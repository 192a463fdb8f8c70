package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// The backend's own client (api.go) must put on the wire what client-go's typed clients put
// there, which the backend used before. Each case makes one call both ways against a server
// that records the request (method, path and query, the headers that shape it, the body)
// and answers with a JSON object of the kind asked for; the two records must be equal. The
// behaviour against a real API server is what the cluster tests check.

// wireRequest is what a request put on the wire.
type wireRequest struct {
	Method, URI, ContentType, Accept, UserAgent, Body string
}

type recorder struct {
	mu   sync.Mutex
	reqs []wireRequest
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.reqs = append(rec.reqs, wireRequest{r.Method, r.URL.RequestURI(), r.Header.Get("Content-Type"),
		r.Header.Get("Accept"), r.Header.Get("User-Agent"), string(body)})
	rec.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	name := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	switch {
	case name == "missing":
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"not found"}`)
	case name == "stale":
		w.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict","code":409,"message":"changed"}`)
	case r.URL.Query().Get("watch") == "true":
		_, _ = io.WriteString(w, `{"type":"DELETED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","uid":"u1"}}}`+"\n")
	case r.Method == http.MethodDelete:
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
	default:
		_, _ = io.WriteString(w, answer(r.URL.Path, r.Method))
	}
}

// answer is a JSON object of the kind a path asks for: a list for a collection's path.
func answer(path, method string) string {
	kinds := map[string][2]string{
		"pods": {"Pod", "v1"}, "events": {"Event", "v1"}, "persistentvolumeclaims": {"PersistentVolumeClaim", "v1"},
		"networkpolicies": {"NetworkPolicy", "networking.k8s.io/v1"}, "runtimeclasses": {"RuntimeClass", "node.k8s.io/v1"},
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i, p := range parts {
		k, ok := kinds[p]
		if !ok {
			continue
		}
		if i == len(parts)-1 && method == http.MethodGet {
			return `{"kind":"` + k[0] + `List","apiVersion":"` + k[1] + `","items":[{"metadata":{"name":"a"}}]}`
		}
		return `{"kind":"` + k[0] + `","apiVersion":"` + k[1] + `","metadata":{"name":"a","uid":"u1"}}`
	}
	return `{}`
}

func TestAPIWireMatchesClientGo(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	rc := &rest.Config{Host: srv.URL, QPS: 50, Burst: 100}
	api, err := newAPIClients(rc)
	if err != nil {
		t.Fatal(err)
	}
	cl := &cluster{api: api, rest: rc, namespace: "ns1", host: srv.URL}
	cs, err := k8s.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns1", Labels: map[string]string{labelOwner: ownerValue},
		ResourceVersion: "7"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns1"}}
	policy := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns1"},
		Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}}}
	del := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: metav1.NewUIDPreconditions("u1")}
	byLabel := metav1.ListOptions{LabelSelector: labelOwner + "=" + ownerValue}
	byField := metav1.ListOptions{FieldSelector: "metadata.name=p"}
	patch := []byte(`{"metadata":{"annotations":{"a":"b"}}}`)
	type call func() error
	cases := []struct {
		name       string
		ours, pkgs call
	}{
		{"pod get", func() error { _, err := cl.pods().Get(ctx, "p", metav1.GetOptions{}); return err },
			func() error { _, err := cs.CoreV1().Pods("ns1").Get(ctx, "p", metav1.GetOptions{}); return err }},
		{"pod list", func() error { _, err := cl.pods().List(ctx, byLabel); return err },
			func() error { _, err := cs.CoreV1().Pods("ns1").List(ctx, byLabel); return err }},
		{"pod create", func() error { _, err := cl.pods().Create(ctx, pod, metav1.CreateOptions{}); return err },
			func() error { _, err := cs.CoreV1().Pods("ns1").Create(ctx, pod, metav1.CreateOptions{}); return err }},
		{"pod update", func() error { _, err := cl.pods().Update(ctx, pod, metav1.UpdateOptions{}); return err },
			func() error { _, err := cs.CoreV1().Pods("ns1").Update(ctx, pod, metav1.UpdateOptions{}); return err }},
		{"pod patch", func() error {
			_, err := cl.pods().Patch(ctx, "p", types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		}, func() error {
			_, err := cs.CoreV1().Pods("ns1").Patch(ctx, "p", types.MergePatchType, patch, metav1.PatchOptions{})
			return err
		}},
		{"pod delete", func() error { return cl.pods().Delete(ctx, "p", del) },
			func() error { return cs.CoreV1().Pods("ns1").Delete(ctx, "p", del) }},
		{"pod watch", func() error { return firstEvent(cl.pods().Watch(ctx, byField)) },
			func() error { return firstEvent(cs.CoreV1().Pods("ns1").Watch(ctx, byField)) }},
		{"event list", func() error { _, err := cl.events().List(ctx, byField); return err },
			func() error { _, err := cs.CoreV1().Events("ns1").List(ctx, byField); return err }},
		{"claim create", func() error { _, err := cl.claims().Create(ctx, claim, metav1.CreateOptions{}); return err },
			func() error {
				_, err := cs.CoreV1().PersistentVolumeClaims("ns1").Create(ctx, claim, metav1.CreateOptions{})
				return err
			}},
		{"claim get", func() error { _, err := cl.claims().Get(ctx, "p", metav1.GetOptions{}); return err },
			func() error {
				_, err := cs.CoreV1().PersistentVolumeClaims("ns1").Get(ctx, "p", metav1.GetOptions{})
				return err
			}},
		{"claim delete", func() error { return cl.claims().Delete(ctx, "p", del) },
			func() error { return cs.CoreV1().PersistentVolumeClaims("ns1").Delete(ctx, "p", del) }},
		{"claim list", func() error { _, err := cl.claims().List(ctx, byLabel); return err },
			func() error { _, err := cs.CoreV1().PersistentVolumeClaims("ns1").List(ctx, byLabel); return err }},
		{"policy create", func() error { _, err := cl.policies().Create(ctx, policy, metav1.CreateOptions{}); return err },
			func() error {
				_, err := cs.NetworkingV1().NetworkPolicies("ns1").Create(ctx, policy, metav1.CreateOptions{})
				return err
			}},
		{"policy delete", func() error { return cl.policies().Delete(ctx, "p", metav1.DeleteOptions{}) },
			func() error { return cs.NetworkingV1().NetworkPolicies("ns1").Delete(ctx, "p", metav1.DeleteOptions{}) }},
		{"policy list", func() error { _, err := cl.policies().List(ctx, byLabel); return err },
			func() error { _, err := cs.NetworkingV1().NetworkPolicies("ns1").List(ctx, byLabel); return err }},
		{"runtime class get", func() error { _, err := cl.runtimeClasses().Get(ctx, "gvisor", metav1.GetOptions{}); return err },
			func() error {
				_, err := cs.NodeV1().RuntimeClasses().Get(ctx, "gvisor", metav1.GetOptions{})
				return err
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, want := record(t, rec, tc.ours), record(t, rec, tc.pkgs)
			if got != want {
				t.Errorf("request differs from client-go's:\n ours %+v\n want %+v", got, want)
			}
		})
	}
}

// record runs one call and returns the one request it made.
func record(t *testing.T, rec *recorder, c func() error) wireRequest {
	t.Helper()
	rec.mu.Lock()
	rec.reqs = nil
	rec.mu.Unlock()
	if err := c(); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(rec.reqs))
	}
	return rec.reqs[0]
}

// firstEvent reads a watch's first event, which must be a pod's deletion, decoded as a typed pod.
func firstEvent(w watch.Interface, err error) error {
	if err != nil {
		return err
	}
	defer w.Stop()
	ev, ok := <-w.ResultChan()
	if !ok {
		return errors.New("the watch ended without an event")
	}
	if p, isPod := ev.Object.(*corev1.Pod); !isPod || ev.Type != watch.Deleted || p.UID != "u1" {
		return fmt.Errorf("event %s %T, want DELETED of pod u1", ev.Type, ev.Object)
	}
	return nil
}

// The exec stream's URL, which remotecommand opens, is the one client-go's core client builds.
func TestExecURLMatchesClientGo(t *testing.T) {
	rc := &rest.Config{Host: "https://192.0.2.1:6443"}
	api, err := newAPIClients(rc)
	if err != nil {
		t.Fatal(err)
	}
	cl := &cluster{api: api, rest: rc, namespace: "ns1"}
	cs, err := k8s.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	opts := &corev1.PodExecOptions{Container: containerName, Command: []string{"sh", "-c", "echo a b"}, Stdin: true, Stdout: true}
	got := cl.execRequest("p", opts).URL().String()
	want := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("ns1").Name("p").
		SubResource("exec").VersionedParams(opts, scheme.ParameterCodec).URL().String()
	if got != want {
		t.Errorf("exec URL %s, want %s", got, want)
	}
}

// The API server's errors come back as client-go's typed clients return them: the backend
// branches on apierrors.IsNotFound and IsConflict.
func TestAPIErrors(t *testing.T) {
	srv := httptest.NewServer(&recorder{})
	t.Cleanup(srv.Close)
	api, err := newAPIClients(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	cl := &cluster{api: api, namespace: "ns1"}
	ctx := context.Background()
	if _, err := cl.pods().Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get of a missing pod: %v, want NotFound", err)
	}
	if err := cl.claims().Delete(ctx, "missing", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("delete of a missing claim: %v, want NotFound", err)
	}
	stale := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stale", ResourceVersion: "1"}}
	if _, err := cl.pods().Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update of a changed pod: %v, want Conflict", err)
	}
}
