package engine_test

import (
	"context"
	"strings"
	"testing"

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
