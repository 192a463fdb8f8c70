package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/pipeline"
)

// [tools] enabled decides what is registered, so no front end can list or run the rest.
func TestToolsetsDecideWhatIsRegistered(t *testing.T) {
	t.Parallel()
	e := newEngine(t, newConfig(t, "[tools]\nenabled = [\"files\"]\n"))
	if names := strings.Join(e.Registry().Names(), ","); names != "patch,read_bytes,read_file,search_files,write_bytes,write_file" {
		t.Fatalf("tools %s", names)
	}
	e = newEngine(t, newConfig(t, "[tools]\nenabled = [\"terminal\"]\n"))
	if names := strings.Join(e.Registry().Names(), ","); names != "terminal" {
		t.Fatalf("tools %s", names)
	}
}

// A session's background jobs die with it.
func TestJobsDieWithTheirSession(t *testing.T) {
	t.Parallel()
	cfg := newConfig(t, "")
	e := newEngine(t, cfg)
	s, err := e.Session(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	// The job beats into a file; its PID is no use from here, since on the local backend it
	// runs in the helper's PID namespace.
	res := s.Run(context.Background(), pipeline.Call{ID: "bg", Name: "terminal",
		Arguments: json.RawMessage(`{"command": "while :; do date +%s%N > job.beat; sleep 0.05; done", "background": true}`)})
	if res.Status != pipeline.StatusOK {
		t.Fatalf("start: %+v", res)
	}
	beat := func() string {
		b, _ := os.ReadFile(filepath.Join(cfg.WorkspaceDir(), "job.beat"))
		return string(b)
	}
	for i := 0; i < 500 && beat() == ""; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if beat() == "" {
		t.Fatal("job never started")
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	first := beat()
	time.Sleep(time.Second)
	if second := beat(); second != first {
		t.Fatalf("the job outlived its session: it beat %q, then %q", first, second)
	}
}

// A session with a running job is not idle: it is reaped only once the job has ended.
func TestSessionWithRunningJobIsNotReaped(t *testing.T) {
	t.Parallel()
	const ttl = 40 * time.Millisecond
	e := newEngine(t, newConfig(t, ""), engine.WithSessionTTL(ttl))
	s, err := e.Session(context.Background(), "jobs")
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	s.OnClose(func() { close(closed) })
	res := s.Run(context.Background(), pipeline.Call{ID: "bg", Name: "terminal",
		Arguments: json.RawMessage(`{"command": "sleep 1", "background": true}`)})
	if res.Status != pipeline.StatusOK {
		t.Fatalf("start: %+v", res)
	}
	select {
	case <-closed:
		t.Fatal("session reaped while its job ran")
	case <-time.After(600 * time.Millisecond):
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("session not reaped after its job ended")
	}
}

// [tools] output_mode naming a tool the runtime does not offer is refused at start, naming
// the key; nothing is left open.
func TestOutputModeForUnknownToolIsRefused(t *testing.T) {
	cfg := newConfig(t, "[tools]\noutput_mode = { termnal = \"full\" }\n")
	e, err := engine.New(context.Background(), cfg)
	if err == nil {
		_ = e.Close(context.Background())
	}
	if err == nil || !strings.Contains(err.Error(), "tools.output_mode.termnal") {
		t.Fatalf("engine: %v, want an error naming tools.output_mode.termnal", err)
	}
}

// The config's [plan] is checked against the tools offered when the runtime starts, and
// holds every session to its steps.
func TestConfigPlan(t *testing.T) {
	bad := newConfig(t, "[plan]\n[[plan.steps]]\nname = \"look\"\ntools = [\"read_fil\"]\n")
	if e, err := engine.New(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "plan.steps[0].tools[0]") {
		if e != nil {
			_ = e.Close(context.Background())
		}
		t.Fatalf("engine: %v, want an error naming plan.steps[0].tools[0]", err)
	}
	e := newEngine(t, newConfig(t, "[plan]\n[[plan.steps]]\nname = \"look\"\ntools = [\"read_file\", \"search_files\"]\n"))
	s := openSession(t, e, "")
	res := s.Run(context.Background(), call("terminal", map[string]any{"command": "echo no"}))
	if res.Status != pipeline.StatusBlocked || res.ErrorCode != pipeline.CodePreHookBlocked {
		t.Fatalf("terminal under a read-only plan: %s %s", res.Status, res.ErrorCode)
	}
	if st := s.Plan(); st == nil || st.Steps[0].Name != "look" {
		t.Fatalf("plan state: %+v", st)
	}
}
