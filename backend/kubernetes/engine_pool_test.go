package kubernetes_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/pipeline"
)

// A burst of sessions larger than the warm pool, through the engine as airlock runs them:
// the pool's pods go to the first sessions, the rest start cold, none fails, every session
// has a pod of its own, the pool refills, and closing the engine leaves no pod behind.
func TestEngineWarmPoolBurst(t *testing.T) {
	cs, ns := client(t)
	dir := t.TempDir()
	toml := clusterTOML(t, "warm_pool = 3\n", "receipts.jsonl")
	c, err := configs.Parse([]byte(toml), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e, err := engine.New(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	if err := e.WaitWarmPool(ctx); err != nil {
		t.Fatal(err)
	}
	const burst = 8
	hosts := make([]string, burst)
	errs := make([]error, burst)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			s, err := e.Session(ctx, "")
			if err != nil {
				errs[i] = err
				return
			}
			r := s.Run(ctx, pipeline.Call{Name: "terminal", Arguments: []byte(`{"command":"hostname"}`)})
			if r.Status != pipeline.StatusOK {
				errs[i] = fmt.Errorf("hostname: %+v", r)
			}
			hosts[i] = strings.TrimSpace(r.Content)
		}()
	}
	close(start)
	wg.Wait()
	seen := map[string]int{}
	for i, h := range hosts {
		if errs[i] != nil {
			t.Fatalf("session %d: %v", i, errs[i])
		}
		if j, dup := seen[h]; dup {
			t.Errorf("sessions %d and %d share pod %s", j, i, h)
		}
		seen[h] = i
	}
	if st, ok := e.WarmPoolStats(); !ok || st.Claimed != 3 || st.Misses != burst-3 {
		t.Errorf("pool stats %+v (pool %v): want 3 claims and %d misses", st, ok, burst-3)
	}
	// The claimed pods carry their sessions' labels, no longer the pool's.
	claimed, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "airlock.dev/owner=airlock,!" + labelPool})
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed.Items) < burst {
		t.Errorf("%d session pods, want at least %d", len(claimed.Items), burst)
	}
	if err := e.WaitWarmPool(ctx); err != nil {
		t.Fatalf("pool did not refill: %v", err)
	}
	// Every pod of this engine (the sessions' and the refilled pool's) goes with it; pods of
	// the namespace's other tests are not looked at.
	mine := map[string]bool{}
	for _, h := range hosts {
		mine[h] = true
	}
	members, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labelPool + "=member"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range members.Items {
		mine[p.Name] = true
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for name := range mine {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && p.DeletionTimestamp == nil {
			t.Errorf("closing the engine left pod %s (labels %v)", name, p.Labels)
		}
	}
	if len(mine) != burst+3 {
		t.Errorf("%d pods seen, want %d sessions' and the pool's 3", len(mine), burst+3)
	}
}
