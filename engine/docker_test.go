package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/airlock-dev/airlock/backend/docker/dockertest"
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/pipeline"
)

// On Docker each session has a container of its own; a named session finds its container
// again from another engine (another process) by fingerprint, and an ephemeral session's
// container is shared by configuration as before.
func TestDockerContainerPerSession(t *testing.T) {
	dir := t.TempDir()
	toml, _ := dockertest.Config(t, "engine", 30, "", "")
	cfg, err := configs.Parse([]byte(toml+"[ledger]\npath = \"receipts.jsonl\"\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	hostname := func(s *engine.Session) string {
		t.Helper()
		r := s.Run(ctx, call("terminal", map[string]any{"command": "hostname"}))
		if r.Status != pipeline.StatusOK {
			t.Fatalf("hostname in %s: %+v", s.ID(), r)
		}
		return strings.TrimSpace(r.Content)
	}
	e1, err := engine.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, b := openSession(t, e1, "alpha"), openSession(t, e1, "beta")
	ha, hb := hostname(a), hostname(b)
	if ha == hb {
		t.Errorf("sessions alpha and beta share container %s", ha)
	}
	if a.Environment() == b.Environment() {
		t.Error("sessions share one environment on a per-session backend")
	}
	if err := e1.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// A later process with the same named session is handed the same container.
	e2 := newEngine(t, cfg)
	if got := hostname(openSession(t, e2, "alpha")); got != ha {
		t.Errorf("alpha again: container %s, was %s", got, ha)
	}
	if got := hostname(openSession(t, e2, "")); got == ha || got == hb {
		t.Errorf("an ephemeral session got a named session's container %s", got)
	}
}

// With warm_pool, sessions without a name take ready containers: a burst of 20 against a
// pool of 3 gets 3 warm and 17 cold, each session a container of its own; the pool refills,
// a named session never takes from it, and closing the engine leaves no container.
func TestDockerWarmPool(t *testing.T) {
	dir := t.TempDir()
	toml, prefix := dockertest.Config(t, "warmpool", 30, "", "reuse_container = false\nwarm_pool = 3\n")
	cfg, err := configs.Parse([]byte(toml+"[ledger]\npath = \"receipts.jsonl\"\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := engine.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	if err := e.WaitWarmPool(ctx); err != nil {
		t.Fatal(err)
	}
	const burst = 20
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
			r := s.Run(ctx, call("terminal", map[string]any{"command": "hostname"}))
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
			t.Errorf("sessions %d and %d share container %s", j, i, h)
		}
		seen[h] = i
	}
	if st, ok := e.WarmPoolStats(); !ok || st.Claimed != 3 || st.Misses != burst-3 {
		t.Errorf("pool stats %+v (pool %v): want 3 claims and %d misses", st, ok, burst-3)
	}
	if err := e.WaitWarmPool(ctx); err != nil {
		t.Fatalf("pool did not refill: %v", err)
	}
	named := openSession(t, e, "named")
	if r := named.Run(ctx, call("terminal", map[string]any{"command": "true"})); r.Status != pipeline.StatusOK {
		t.Fatalf("named session: %+v", r)
	}
	if st, _ := e.WarmPoolStats(); st.Claimed != 3 {
		t.Errorf("a named session took from the pool: %+v", st)
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	noContainers(t, prefix, "closing the engine")
}

// With WithPrivateEnvironments (airlock serve), sessions without a name get a container
// each even where reuse_container (the default) would have them share one, and each is
// removed with its session; without it they share one, as before.
func TestDockerPrivateEnvironments(t *testing.T) {
	dir := t.TempDir()
	toml, prefix := dockertest.Config(t, "private", 30, "", "")
	cfg, err := configs.Parse([]byte(toml+"[ledger]\npath = \"receipts.jsonl\"\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	hostname := func(s *engine.Session) string {
		t.Helper()
		r := s.Run(ctx, call("terminal", map[string]any{"command": "hostname"}))
		if r.Status != pipeline.StatusOK {
			t.Fatalf("hostname in %s: %+v", s.ID(), r)
		}
		return strings.TrimSpace(r.Content)
	}
	shared := newEngine(t, cfg)
	if a, b := hostname(openSession(t, shared, "")), hostname(openSession(t, shared, "")); a != b {
		t.Fatalf("without private environments two sessions got containers %s and %s: the default changed", a, b)
	}
	if err := shared.Close(ctx); err != nil {
		t.Fatal(err)
	}
	dockertest.RemoveContainers(prefix)

	e, err := engine.New(ctx, cfg, engine.WithPrivateEnvironments())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	a, b := openSession(t, e, ""), openSession(t, e, "")
	if ha, hb := hostname(a), hostname(b); ha == hb {
		t.Fatalf("two private sessions share container %s", ha)
	}
	for _, s := range []*engine.Session{a, b} {
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	noContainers(t, prefix, "closed private sessions")
}

// noContainers fails the test when a container whose name has prefix is left; after says
// what should have removed them.
func noContainers(t *testing.T, prefix, after string) {
	t.Helper()
	list, err := dockertest.Client(t).ContainerList(context.Background(),
		container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("name", prefix))})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) > 0 {
		t.Errorf("%s left %d containers, first %v", after, len(list), list[0].Names)
	}
}
