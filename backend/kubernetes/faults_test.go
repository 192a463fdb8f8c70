package kubernetes_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/kubernetes"
)

// TestTimeoutLeavesNoProcess: a command that timed out, with children in the background and
// one that left its process group with setsid, leaves no process behind in the pod.
func TestTimeoutLeavesNoProcess(t *testing.T) {
	env := newEnv(t, testConfig(t))
	res := mustExec(t, env, backend.Request{
		Command: "sleep 3131 & setsid sleep 3132 & (sleep 3133 &) ; sleep 3134",
		Timeout: time.Second,
	})
	if !res.TimedOut {
		t.Fatalf("not timed out: %+v", res)
	}
	var left string
	for i := 0; i < 30; i++ {
		left = sh(t, env, "ps -o pid,args | grep 'sleep 313[1-4]' | grep -v grep || true")
		if left == "" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("processes left in the pod after the timeout:\n%s", left)
}

// TestPodDeletedFromOutside: a pod deleted behind Airlock's back — gracefully, as kubectl
// delete does, or forcibly, when the API object goes at once while its container still
// runs — is replaced on the next call, whose result says so.
func TestPodDeletedFromOutside(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grace *int64
	}{{"graceful", nil}, {"forced", ptr.To[int64](0)}} {
		t.Run(tc.name, func(t *testing.T) { testPodDeleted(t, tc.grace) })
	}
}

func testPodDeleted(t *testing.T, grace *int64) {
	cs, ns := client(t)
	env := newEnv(t, testConfig(t))
	sh(t, env, "echo before > /workspace/f")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	old, err := cs.CoreV1().Pods(ns).Get(ctx, env.PodName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods(ns).Delete(ctx, env.PodName(), metav1.DeleteOptions{GracePeriodSeconds: grace}); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := cs.CoreV1().Pods(ns).Get(ctx, env.PodName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the pod was not deleted")
		}
		time.Sleep(100 * time.Millisecond)
	}
	res := mustExec(t, env, backend.Request{Command: "echo after; cat /workspace/f 2>/dev/null || echo gone"})
	if res.ExitCode != 0 || string(res.Stdout) != "after\ngone\n" {
		t.Fatalf("next call: %+v", res)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "environment recreated") {
		t.Errorf("the result does not say the environment was recreated: %q", res.Notes)
	}
	p, err := cs.CoreV1().Pods(ns).Get(ctx, env.PodName(), metav1.GetOptions{})
	if err != nil || p.UID == old.UID {
		t.Errorf("no new pod: %v", err)
	}
}

// TestHelperTampering: a command overwrites the helper's binary and kills every process of
// its uid (the helper runs as the commands' user: the pod has no root). The next call runs
// on a helper started again from a binary whose digest was checked, and says so.
func TestHelperTampering(t *testing.T) {
	env := newEnv(t, testConfig(t))
	before := sh(t, env, "sha256sum /.airlock/helper-* | cut -d' ' -f1")
	// The attack ends its own helper: its call fails, saying so.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	res, err := env.Exec(ctx, backend.Request{Command: "for f in /.airlock/helper-*; do cp /bin/busybox $f.new && mv -f $f.new $f; done; kill -9 -1"})
	cancel()
	t.Logf("attack: %+v, err %v", res, err)
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err = env.Exec(ctx, backend.Request{Command: "sha256sum /.airlock/helper-* | cut -d' ' -f1"})
		cancel()
		if err == nil {
			break
		}
		t.Logf("call %d after the attack: %v", i, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if after := strings.TrimSpace(string(res.Stdout)); after != before {
		t.Errorf("the helper runs from a binary with digest %s, want %s", after, before)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "restarted the resident helper") {
		t.Errorf("the result does not say the helper was restarted: %q", res.Notes)
	}
}

// TestAPIServerRestart: a session survives the API server restarting under it (the helper's
// exec stream breaks; the next call starts the helper again in the same pod).
func TestAPIServerRestart(t *testing.T) {
	script := os.Getenv("AIRLOCK_K8S_SCRIPT")
	if script == "" {
		t.Skip("AIRLOCK_K8S_SCRIPT is not set: no way to restart the API server (eval \"$(bash .ci/k8s.sh env)\")")
	}
	env := newEnv(t, testConfig(t))
	sh(t, env, "echo kept > /workspace/kept")
	out, err := exec.Command("bash", script, "restart-apiserver").CombinedOutput()
	if err != nil {
		t.Fatalf("restart-apiserver: %v\n%s", err, out)
	}
	var res backend.Result
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res, err = env.Exec(ctx, backend.Request{Command: "cat /workspace/kept"})
		cancel()
		// The call that finds the stream broken may fail while it ran; the next repairs.
		if err == nil || i == 2 {
			break
		}
		t.Logf("call %d after the restart: %v", i, err)
	}
	if err != nil {
		t.Fatalf("after the API server restart: %v", err)
	}
	if strings.TrimSpace(string(res.Stdout)) != "kept" {
		t.Errorf("after the restart: %+v (notes %q)", res, res.Notes)
	}
	t.Logf("notes: %q", res.Notes)
}

// TestStartFailureNamesCause: a pod that cannot run is an error naming the cause from its
// status and events, within pod_start_timeout, and the pod is deleted.
func TestStartFailureNamesCause(t *testing.T) {
	cs, ns := client(t)
	for _, tc := range []struct {
		name, want string
		edit       func(*kubernetes.Config)
	}{
		{"image", "ErrImageNeverPull", func(c *kubernetes.Config) { c.Image = "airlock-test/no-such-image:1" }},
		{"scheduling", "not scheduled", func(c *kubernetes.Config) {
			c.NodeSelector = map[string]string{"airlock.dev/no-such-node": "x"}
			c.PodStartTimeout = backend.Duration(5 * time.Second)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			tc.edit(&cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			env, err := kubernetes.New(ctx, cfg)
			if err == nil {
				_ = env.Close(ctx)
				t.Fatal("New succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error does not name the cause %q: %v", tc.want, err)
			}
			t.Logf("error: %v", err)
			list, lerr := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "airlock.dev/owner=airlock"})
			if lerr != nil {
				t.Fatal(lerr)
			}
			for _, p := range list.Items {
				doomed := p.Spec.NodeSelector["airlock.dev/no-such-node"] != "" || p.Spec.Containers[0].Image == "airlock-test/no-such-image:1"
				if doomed && p.DeletionTimestamp == nil {
					t.Errorf("pod %s that cannot run was left behind", p.Name)
				}
			}
		})
	}
}

// TestNetworkNoneDetect: with [network] mode none and the default detection, a cluster that
// does not enforce NetworkPolicy is refused with an error saying so; one that does gives a
// pod that cannot reach the API server.
func TestNetworkNoneDetect(t *testing.T) {
	cfg := testConfig(t)
	cfg.Network, cfg.NetworkPolicyEnforcement = backend.NetworkNone, kubernetes.EnforceDetect
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := kubernetes.New(ctx, cfg)
	if err != nil {
		if !strings.Contains(err.Error(), "does not enforce") && !strings.Contains(err.Error(), "cannot be proved") {
			t.Fatalf("refused, but not for NetworkPolicy: %v", err)
		}
		t.Logf("refused as it must be on a cluster that does not enforce NetworkPolicy: %v", err)
		return
	}
	t.Cleanup(func() { _ = env.Close(context.Background()) })
	if !strings.Contains(strings.Join(env.Describe().Notes, "\n"), "NetworkPolicy is enforced") {
		t.Errorf("accepted without proof: %q", env.Describe().Notes)
	}
}
