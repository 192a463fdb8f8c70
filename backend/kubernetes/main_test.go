package kubernetes_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/helper/helpertest"
	"github.com/airlock-dev/airlock/backend/kubernetes"
	"github.com/airlock-dev/airlock/internal/buildtest"
)

// These tests run against a real cluster (never a fake clientset): the one
// AIRLOCK_K8S_KUBECONFIG names, with the image AIRLOCK_K8S_IMAGE already on its nodes. Without
// one they skip, unless AIRLOCK_REQUIRE_K8S=1 (CI) makes that a failure. Each test process
// works in a namespace of its own, deleted when it ends.

var cluster struct {
	once sync.Once
	cs   *k8s.Clientset
	ns   string
	err  error
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild())
	}
	code := m.Run()
	if cluster.ns != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_ = cluster.cs.CoreV1().Namespaces().Delete(ctx, cluster.ns, metav1.DeleteOptions{})
		cancel()
	}
	buildtest.Cleanup()
	os.Exit(code)
}

// client returns a clientset for the test cluster and the test process's namespace, made
// on first use, after a real API call shows the cluster answers.
func client(t testing.TB) (*k8s.Clientset, string) {
	t.Helper()
	kc := os.Getenv("AIRLOCK_K8S_KUBECONFIG")
	if kc == "" {
		unavailable(t, "AIRLOCK_K8S_KUBECONFIG is not set (bash .ci/k8s.sh up; eval \"$(bash .ci/k8s.sh env)\")")
	}
	cluster.once.Do(func() {
		rc, err := clientcmd.BuildConfigFromFlags("", kc)
		if err != nil {
			cluster.err = err
			return
		}
		rc.Timeout = 10 * time.Second
		cs, err := k8s.NewForConfig(rc)
		if err != nil {
			cluster.err = err
			return
		}
		if _, err := cs.Discovery().ServerVersion(); err != nil {
			cluster.err = fmt.Errorf("the API server does not answer: %w", err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			GenerateName: fmt.Sprintf("airlock-test-%d-", os.Getpid())}}, metav1.CreateOptions{})
		if err != nil {
			cluster.err = fmt.Errorf("create test namespace: %w", err)
			return
		}
		cluster.cs, cluster.ns = cs, ns.Name
		// The namespace's default service account is made by the controller manager: pods
		// are refused until it exists.
		for i := 0; i < 100; i++ {
			if _, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{}); err == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	if cluster.err != nil {
		unavailable(t, "kubernetes cluster at "+kc+": "+cluster.err.Error())
	}
	return cluster.cs, cluster.ns
}

func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("AIRLOCK_REQUIRE_K8S") == "1" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// testConfig is a configuration for the test cluster: the test image, never pulled, the
// static helper, the test namespace. [network] is "open" unless a test says otherwise: the
// test cluster's bridge plugin does not enforce NetworkPolicy (see TestNetworkNoneDetect).
func testConfig(t testing.TB) kubernetes.Config {
	t.Helper()
	_, ns := client(t)
	cfg := kubernetes.DefaultConfig()
	cfg.Kubeconfig = os.Getenv("AIRLOCK_K8S_KUBECONFIG")
	cfg.Namespace = ns
	cfg.Image = os.Getenv("AIRLOCK_K8S_IMAGE")
	if cfg.Image == "" {
		cfg.Image = "airlock-test/busybox:1"
	}
	cfg.PullPolicy = "Never"
	cfg.HelperBinary = helpertest.StaticBuild(t)
	cfg.Network = backend.NetworkOpen
	cfg.CPURequest, cfg.MemoryRequest, cfg.MemoryLimit = "10m", "16Mi", "256Mi"
	cfg.KillGrace = 500 * time.Millisecond
	cfg.DefaultTimeout = time.Minute
	cfg.PodStartTimeout = backend.Duration(90 * time.Second)
	return cfg
}

func newEnv(t testing.TB, cfg kubernetes.Config, opts ...kubernetes.Option) *kubernetes.Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	opts = append(opts, kubernetes.WithLogger(hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: os.Stderr})))
	env, err := kubernetes.New(ctx, cfg, opts...)
	if err != nil {
		t.Fatalf("kubernetes.New: %v", err)
	}
	t.Logf("New took %s", time.Since(start))
	t.Cleanup(func() { _ = env.Close(context.Background()) })
	return env
}

func mustExec(t testing.TB, env backend.Environment, req backend.Request) backend.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := env.Exec(ctx, req)
	if err != nil {
		t.Fatalf("exec %q %q: %v", req.Command, req.Argv, err)
	}
	return res
}

func sh(t testing.TB, env backend.Environment, cmd string) string {
	t.Helper()
	res := mustExec(t, env, backend.Request{Command: cmd})
	if res.ExitCode != 0 {
		t.Fatalf("%q exited %d: %s %s", cmd, res.ExitCode, res.Stdout, res.Stderr)
	}
	return strings.TrimSpace(string(res.Stdout))
}

// clusterTOML is an airlock.toml for the test cluster (the test image, the static helper,
// the test namespace, network "open" and approvals "auto", as testConfig), with extra added
// to [environment.kubernetes] and the ledger at ledger.
func clusterTOML(t testing.TB, extra, ledger string) string {
	t.Helper()
	cfg := testConfig(t)
	return fmt.Sprintf(`[environment]
type = "kubernetes"
timeout = 60
[environment.kubernetes]
kubeconfig = %q
namespace = %q
image = %q
pull_policy = "Never"
helper_binary = %q
cpu_request = "10m"
memory_request = "16Mi"
memory_limit = "256Mi"
pod_start_timeout = "90s"
%s[network]
mode = "open"
[approvals]
mode = "auto"
[ledger]
path = %q
`, cfg.Kubeconfig, cfg.Namespace, cfg.Image, cfg.HelperBinary, extra, ledger)
}
