package kubernetes_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/kubernetes"
)

// childEnv makes the test binary a child that opens a session's pod, prints its name and
// waits to be killed: an airlock process that dies without closing anything.
const childEnv = "AIRLOCK_K8S_TEST_CHILD"

// childConfig is what the child is told of the test's configuration.
// Member makes the child's pod a warm-pool member, with an idle TTL of a second.
type childConfig struct {
	Kubeconfig, Namespace, Image, HelperBinary string
	Member                                     bool
}

func runChild() int {
	var c childConfig
	if err := json.Unmarshal([]byte(os.Getenv(childEnv)), &c); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	cfg := kubernetes.DefaultConfig()
	cfg.Kubeconfig, cfg.Namespace, cfg.Image, cfg.HelperBinary = c.Kubeconfig, c.Namespace, c.Image, c.HelperBinary
	cfg.PullPolicy, cfg.Network = "Never", backend.NetworkOpen
	cfg.CPURequest, cfg.MemoryRequest, cfg.MemoryLimit = "10m", "16Mi", "256Mi"
	if c.Member {
		cfg.PoolMember, cfg.IdleTTL = true, backend.Duration(time.Second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, err := kubernetes.New(ctx, cfg)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	if _, err := env.Exec(ctx, backend.Request{Command: "true"}); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("pod:", env.PodName())
	select {}
}

// TestGCRemovesOrphans: the pod of an airlock process killed with SIGKILL is deleted by gc,
// while a live session's pod is left alone.
func TestGCRemovesOrphans(t *testing.T) {
	cs, ns := client(t)
	cfg := testConfig(t)
	live := newEnv(t, cfg)

	child, orphan := startChild(t, childConfig{cfg.Kubeconfig, cfg.Namespace, cfg.Image, cfg.HelperBinary, false})
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	items, err := kubernetes.GC(ctx, cfg, backend.GCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var removed []string
	for _, it := range items {
		if it.Err != nil {
			t.Errorf("gc %s: %v", it.Name, it.Err)
		}
		if it.Removed {
			removed = append(removed, it.Name+" ("+it.Reason+")")
		}
	}
	t.Logf("gc removed: %q", removed)
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, orphan, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		if p, gerr := cs.CoreV1().Pods(ns).Get(ctx, orphan, metav1.GetOptions{}); gerr != nil || p.DeletionTimestamp == nil {
			t.Errorf("the orphan %s is still there after gc (err %v)", orphan, err)
		}
	}
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, orphan, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the orphan's network policy is still there (err %v)", err)
	}
	// The live session is untouched and still works.
	if got := sh(t, live, "echo alive"); got != "alive" {
		t.Errorf("live session after gc: %q", got)
	}
}

// startChild starts the test binary as a child that opens a pod and returns the pod's name.
func startChild(t *testing.T, c childConfig) (*exec.Cmd, string) {
	t.Helper()
	b, _ := json.Marshal(c)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childEnv+"="+string(b))
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	line, _ := bufio.NewReader(out).ReadString('\n')
	pod, ok := strings.CutPrefix(strings.TrimSpace(line), "pod: ")
	if !ok {
		t.Fatalf("child: %s", line)
	}
	return child, pod
}

// A warm-pool pod waits unused as long as its process lives, whatever its idle TTL: gc keeps
// it. Once the process is killed with SIGKILL (no Close ran), gc deletes it.
func TestGCWarmPoolMember(t *testing.T) {
	cs, ns := client(t)
	cfg := testConfig(t)
	child, member := startChild(t, childConfig{cfg.Kubeconfig, cfg.Namespace, cfg.Image, cfg.HelperBinary, true})
	time.Sleep(2 * time.Second) // past the member's idle TTL
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gcOf := func() []backend.GCItem {
		items, err := kubernetes.GC(ctx, cfg, backend.GCOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var mine []backend.GCItem
		for _, it := range items {
			if it.Err != nil {
				t.Errorf("gc %s: %v", it.Name, it.Err)
			}
			if it.Name == ns+"/"+member {
				mine = append(mine, it)
			}
		}
		return mine
	}
	if items := gcOf(); len(items) > 0 {
		t.Fatalf("gc took the waiting member of a live process: %+v", items)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	items := gcOf()
	if len(items) != 1 || !items[0].Removed || !strings.Contains(items[0].Reason, "warm-pool") {
		t.Fatalf("gc after the kill: %+v, want the member removed as a dead process's warm-pool pod", items)
	}
	if p, err := cs.CoreV1().Pods(ns).Get(ctx, member, metav1.GetOptions{}); err == nil && p.DeletionTimestamp == nil {
		t.Errorf("the member %s is still there after gc", member)
	}
}
