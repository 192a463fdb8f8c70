package engine_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend/docker/dockertest"
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/pipeline"
)

// On Docker each session has a container of its own; a named session finds its container
// again from another engine (another process) by fingerprint, and an ephemeral session's
// container is shared by configuration as before.
func TestDockerContainerPerSession(t *testing.T) {
	dockertest.Client(t)
	dir := t.TempDir()
	prefix := fmt.Sprintf("airlock_engine_%d_%d_", os.Getpid(), time.Now().UnixNano()%1e9)
	t.Cleanup(func() { dockertest.RemoveContainers(prefix) })
	cfg, err := configs.Parse([]byte(fmt.Sprintf(`[environment]
type = "docker"
timeout = 30
[environment.docker]
image = %q
agent_binary = %q
container_name_prefix = %q
[approvals]
mode = "auto"
[ledger]
path = "receipts.jsonl"
`, dockertest.Image(t), dockertest.AgentBinary(t), prefix)), dir)
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
