package kubernetes

import (
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// cluster is a connection to one API server: the REST clients of the groups the backend
// calls (api.go), the REST config the exec streams are opened with, and the namespace pods
// live in.
type cluster struct {
	api       apiClients
	rest      *rest.Config
	namespace string
	host      string // the API server's address, for messages
}

// connect loads the client configuration: the kubeconfig the section names, else the
// in-cluster service account, else KUBECONFIG, else ~/.kube/config.
func connect(c Config) (*cluster, error) {
	rc, ns, err := restConfig(c)
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 50, 100
	api, err := newAPIClients(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: client: %w", err)
	}
	if c.Namespace != "" {
		ns = c.Namespace
	}
	if ns == "" {
		ns = "default"
	}
	return &cluster{api: api, rest: rc, namespace: ns, host: rc.Host}, nil
}

func restConfig(c Config) (*rest.Config, string, error) {
	if c.Kubeconfig == "" && c.Context == "" {
		if rc, err := rest.InClusterConfig(); err == nil {
			ns, _, _ := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
				clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).Namespace()
			return rc, inClusterNamespace(ns), nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if c.Kubeconfig != "" {
		rules.ExplicitPath = c.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.Context})
	rc, err := cc.ClientConfig()
	if clientcmd.IsEmptyConfig(err) && c.Kubeconfig == "" {
		err = errors.Join(errNoCluster, err)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%w: kubernetes: no usable client configuration (in-cluster, environment.kubernetes.kubeconfig, KUBECONFIG or ~/.kube/config): %w", errUnavailable, err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		ns = ""
	}
	return rc, ns, nil
}

// inClusterNamespace is the pod's own namespace when running in a cluster.
func inClusterNamespace(fromConfig string) string {
	if fromConfig != "" && fromConfig != "default" {
		return fromConfig
	}
	if b, err := readFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(b) > 0 {
		return string(b)
	}
	return fromConfig
}

// client-go reports stream errors it cannot return (a stream closed under a copy) through
// klog, on stderr; Airlock's errors say what matters, and its stderr is the user's.
func init() {
	klog.SetLogger(logr.Discard())
}
