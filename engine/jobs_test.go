package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/pipeline"
)

// [tools] enabled decides what is registered, so no front end can list or run the rest.
func TestToolsetsDecideWhatIsRegistered(t *testing.T) {
	t.Parallel()
	e := newEngine(t, newConfig(t, "[tools]\nenabled = [\"files\"]\n"))
	if names := strings.Join(e.Registry().Names(), ","); names != "patch,read_file,search_files,write_file" {
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
	res := s.Run(context.Background(), pipeline.Call{ID: "bg", Name: "terminal",
		Arguments: json.RawMessage(`{"command": "echo $$ > job.pid; exec sleep 300", "background": true}`)})
	if res.Status != pipeline.StatusOK {
		t.Fatalf("start: %+v", res)
	}
	pidFile := filepath.Join(cfg.WorkspaceDir(), "job.pid")
	var pid int
	for i := 0; i < 500 && pid == 0; i++ {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		time.Sleep(10 * time.Millisecond)
	}
	if pid == 0 {
		t.Fatal("job never started")
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && strings.Contains(string(b), ") Z ") {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("job %d outlived its session", pid)
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
