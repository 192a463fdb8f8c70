package kubernetes

import (
	"context"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// The backend's own client of the Kubernetes API: a rest.RESTClient per API group it calls
// (core/v1, networking/v1, node/v1), a scheme holding only those groups, and the few
// resources and verbs the backend uses. Why not client-go's clientset
// (k8s.io/client-go/kubernetes): it links every API group's typed client and apply
// configurations, and its scheme package registers all ~50 group versions at package
// initialisation — in every airlock process, whatever its backend, since Go initialises
// every linked package. Without it the airlock binary is 49.0 MB instead of 85.9 MB, 313
// packages do initialisation work instead of 396, and their time summed is ~7.8 ms instead
// of ~12.4 ms at load 2.5 (docs/benchmarks.md, "The Kubernetes client"). The requests are the ones the typed clients make
// (client-go/gentype): the same paths, options encoded by a parameter codec of the same
// types, protobuf preferred with JSON accepted, one shared transport and rate limiter, and
// the API server's errors as *apierrors.StatusError, so apierrors.IsNotFound and its kin
// work unchanged. The scheme is built on the first connection, not at start-up.

// apiScheme is the scheme of the groups the backend calls, with its codecs.
type apiScheme struct {
	scheme *runtime.Scheme
	codecs serializer.CodecFactory
	params runtime.ParameterCodec
}

var theScheme = sync.OnceValue(func() apiScheme {
	s := runtime.NewScheme()
	// Each AddToScheme also registers meta/v1's options (ListOptions, DeleteOptions…) and
	// WatchEvent in its group version, which the parameter codec and watches need.
	b := runtime.NewSchemeBuilder(corev1.AddToScheme, networkingv1.AddToScheme, nodev1.AddToScheme)
	if err := b.AddToScheme(s); err != nil {
		panic("kubernetes: scheme: " + err.Error()) // static registrations: a bug, not a condition
	}
	return apiScheme{scheme: s, codecs: serializer.NewCodecFactory(s), params: runtime.NewParameterCodec(s)}
})

// apiClients are the REST clients of one API server, one per group version.
type apiClients struct {
	core, networking, node *rest.RESTClient
}

// newAPIClients makes the clients of rc, sharing one transport and one rate limiter as the
// clientset does.
func newAPIClients(rc *rest.Config) (apiClients, error) {
	sch := theScheme()
	c := *rc
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if c.RateLimiter == nil && c.QPS > 0 {
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	c.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(sch.scheme, sch.codecs).WithoutConversion()
	hc, err := rest.HTTPClientFor(&c)
	if err != nil {
		return apiClients{}, err
	}
	client := func(gv schema.GroupVersion, path string) (*rest.RESTClient, error) {
		gc := c
		gc.GroupVersion, gc.APIPath = &gv, path
		return rest.RESTClientForConfigAndClient(&gc, hc)
	}
	var a apiClients
	if a.core, err = client(corev1.SchemeGroupVersion, "/api"); err != nil {
		return apiClients{}, err
	}
	if a.networking, err = client(networkingv1.SchemeGroupVersion, "/apis"); err != nil {
		return apiClients{}, err
	}
	if a.node, err = client(nodev1.SchemeGroupVersion, "/apis"); err != nil {
		return apiClients{}, err
	}
	return a, nil
}

func (cl *cluster) pods() collection[*corev1.Pod, *corev1.PodList] {
	return newCollection[corev1.Pod, corev1.PodList](cl.api.core, cl.namespace, "pods")
}

func (cl *cluster) events() collection[*corev1.Event, *corev1.EventList] {
	return newCollection[corev1.Event, corev1.EventList](cl.api.core, cl.namespace, "events")
}

func (cl *cluster) claims() collection[*corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList] {
	return newCollection[corev1.PersistentVolumeClaim, corev1.PersistentVolumeClaimList](cl.api.core, cl.namespace, "persistentvolumeclaims")
}

func (cl *cluster) policies() collection[*networkingv1.NetworkPolicy, *networkingv1.NetworkPolicyList] {
	return newCollection[networkingv1.NetworkPolicy, networkingv1.NetworkPolicyList](cl.api.networking, cl.namespace, "networkpolicies")
}

// runtimeClasses are cluster-scoped: no namespace.
func (cl *cluster) runtimeClasses() collection[*nodev1.RuntimeClass, *nodev1.RuntimeClassList] {
	return newCollection[nodev1.RuntimeClass, nodev1.RuntimeClassList](cl.api.node, "", "runtimeclasses")
}

// execRequest is the exec subresource of a pod, for remotecommand to open.
func (cl *cluster) execRequest(pod string, opts *corev1.PodExecOptions) *rest.Request {
	return cl.api.core.Post().Resource("pods").Namespace(cl.namespace).Name(pod).
		SubResource("exec").VersionedParams(opts, theScheme().params)
}

// apiObject is an object of the API: it has a name (its ObjectMeta's).
type apiObject interface {
	runtime.Object
	GetName() string
}

// object is a pointer to an API object type O; list a pointer to a list type L.
type (
	object[O any] interface {
		*O
		apiObject
	}
	list[L any] interface {
		*L
		runtime.Object
	}
)

// collection is one resource of one namespace ("" for a cluster-scoped one): T is its
// object, L its list. Its methods make the requests client-go's generated clients make.
type collection[T apiObject, L runtime.Object] struct {
	c       *rest.RESTClient
	ns      string
	name    string
	newObj  func() T
	newList func() L
}

func newCollection[O, L any, PO object[O], PL list[L]](c *rest.RESTClient, ns, name string) collection[PO, PL] {
	return collection[PO, PL]{c: c, ns: ns, name: name,
		newObj: func() PO { return new(O) }, newList: func() PL { return new(L) }}
}

func (r collection[T, L]) req(verb string) *rest.Request {
	return r.c.Verb(verb).UseProtobufAsDefault().NamespaceIfScoped(r.ns, r.ns != "").Resource(r.name)
}

func (r collection[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	out := r.newObj()
	err := r.req(http.MethodGet).Name(name).VersionedParams(&opts, theScheme().params).Do(ctx).Into(out)
	return out, err
}

func (r collection[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	out := r.newList()
	err := r.req(http.MethodGet).VersionedParams(&opts, theScheme().params).Timeout(timeoutOf(opts)).Do(ctx).Into(out)
	return out, err
}

// Watch watches the objects opts selects, until ctx ends or the server closes the watch.
func (r collection[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return r.req(http.MethodGet).VersionedParams(&opts, theScheme().params).Timeout(timeoutOf(opts)).Watch(ctx)
}

func (r collection[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	out := r.newObj()
	err := r.req(http.MethodPost).VersionedParams(&opts, theScheme().params).Body(obj).Do(ctx).Into(out)
	return out, err
}

// Update replaces the object of obj's name; its resourceVersion makes the update conditional.
func (r collection[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	out := r.newObj()
	err := r.req(http.MethodPut).Name(obj.GetName()).VersionedParams(&opts, theScheme().params).Body(obj).Do(ctx).Into(out)
	return out, err
}

func (r collection[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (T, error) {
	out := r.newObj()
	err := r.c.Patch(pt).UseProtobufAsDefault().NamespaceIfScoped(r.ns, r.ns != "").Resource(r.name).Name(name).
		VersionedParams(&opts, theScheme().params).Body(data).Do(ctx).Into(out)
	return out, err
}

func (r collection[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.req(http.MethodDelete).Name(name).Body(&opts).Do(ctx).Error()
}

// timeoutOf is the request timeout a list or watch asks the server for, as the generated
// clients set it.
func timeoutOf(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}
