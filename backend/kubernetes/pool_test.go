package kubernetes_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/kubernetes"
	"github.com/airlock-dev/airlock/envpool"
)

const labelPool = "airlock.dev/pool"

func memberConfig(t *testing.T) kubernetes.Config {
	cfg := testConfig(t)
	cfg.PoolMember = true
	return cfg
}

// Twenty claimers of one warm-pool pod, each with its own connection to the API server as
// twenty processes would have, race: exactly one wins, the others get ErrClaimed, the pod's
// labels name the winner's session, and a loser's Close leaves the pod alone.
func TestClaimIsAtomic(t *testing.T) {
	cs, ns := client(t)
	member := newEnv(t, memberConfig(t))
	p, err := cs.CoreV1().Pods(ns).Get(context.Background(), member.PodName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Labels[labelPool] != "member" {
		t.Fatalf("pool pod labels %v, want %s=member", p.Labels, labelPool)
	}
	const claimers = 20
	handles := make([]*kubernetes.Env, claimers)
	for i := range handles {
		if handles[i], err = member.ClaimHandle(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make([]error, claimers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, h := range handles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = h.Claim(ctx, fmt.Sprint("s-", i))
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("claimers %d and %d both won", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, backend.ErrClaimed):
			t.Errorf("claimer %d: %v, want ErrClaimed", i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("no claimer won: %v", errs)
	}
	for i, h := range handles {
		if i == winner {
			continue
		}
		if !h.ClaimLost() {
			t.Errorf("claimer %d lost but would delete the pod on close", i)
		}
		h.ForgetHelper()
		if err := h.Close(ctx); err != nil {
			t.Errorf("loser %d close: %v", i, err)
		}
	}
	p, err = cs.CoreV1().Pods(ns).Get(ctx, member.PodName(), metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("the claimed pod after the losers closed: %v (err %v)", p.DeletionTimestamp, err)
	}
	if _, pooled := p.Labels[labelPool]; pooled || p.Labels["airlock.dev/session"] != fmt.Sprint("s-", winner) {
		t.Errorf("claimed pod labels %v, want claimer %d's session and no pool label", p.Labels, winner)
	}
	if got := sh(t, member, "echo alive"); got != "alive" {
		t.Errorf("the claimed pod's helper after the race: %q", got)
	}
}

func newPool(t *testing.T, cfg kubernetes.Config, size int) *envpool.Pool {
	t.Helper()
	cfg.PoolMember = true
	p := envpool.New(size, func(ctx context.Context) (backend.Claimer, error) { return kubernetes.New(ctx, cfg) }, nil)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := p.WaitReady(ctx, size); err != nil {
		t.Fatalf("pool of %d not ready: %v (stats %+v)", size, err, p.Stats())
	}
	return p
}

// A pool pod deleted from outside is noticed (the pod watch sees it go), closed and
// replaced; the pool then hands out only live pods, and a claimed one is not recreated.
func TestWarmPoolReplacesDeletedMember(t *testing.T) {
	cs, ns := client(t)
	cfg := testConfig(t)
	p := newPool(t, cfg, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labelPool + "=member"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Fatalf("%d pool pods, want 2", len(list.Items))
	}
	victim := list.Items[0].Name
	if err := cs.CoreV1().Pods(ns).Delete(ctx, victim, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for p.Stats().Lost < 1 || p.Ready() < 2 {
		if ctx.Err() != nil {
			t.Fatalf("deleted member not replaced: stats %+v, ready %d", p.Stats(), p.Ready())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := range 2 {
		env, ok := p.Take(ctx, fmt.Sprint("s-", i))
		if !ok {
			t.Fatalf("take %d: pool empty", i)
		}
		t.Cleanup(func() { _ = env.Close(context.Background()) })
		if name := env.(*kubernetes.Env).PodName(); name == victim {
			t.Fatalf("the deleted pod %s was handed out", victim)
		}
		if out := sh(t, env, "echo alive"); out != "alive" {
			t.Errorf("claimed member says %q", out)
		}
		if notes := env.Describe().Notes; strings.Contains(strings.Join(notes, " "), "recreated") {
			t.Errorf("a claimed member had to be recreated: %q", notes)
		}
	}
}
