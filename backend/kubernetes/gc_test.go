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
type childConfig struct{ Kubeconfig, Namespace, Image, AgentBinary string }

func runChild() int {
	var c childConfig
	if err := json.Unmarshal([]byte(os.Getenv(childEnv)), &c); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	cfg := kubernetes.DefaultConfig()
	cfg.Kubeconfig, cfg.Namespace, cfg.Image, cfg.AgentBinary = c.Kubeconfig, c.Namespace, c.Image, c.AgentBinary
	cfg.PullPolicy, cfg.Network = "Never", backend.NetworkOpen
	cfg.CPURequest, cfg.MemoryRequest, cfg.MemoryLimit = "10m", "16Mi", "256Mi"
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

	b, _ := json.Marshal(childConfig{cfg.Kubeconfig, cfg.Namespace, cfg.Image, cfg.AgentBinary})
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
	orphan, ok := strings.CutPrefix(strings.TrimSpace(line), "pod: ")
	if !ok {
		t.Fatalf("child: %s", line)
	}
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
