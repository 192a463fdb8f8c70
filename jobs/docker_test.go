package jobs_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
	"github.com/airlock-dev/airlock/jobs"
)

// Jobs run on Docker (helper mode) through the same contract: the helper kills the job's
// tree, and its live output frames let the job be read while it runs.
func TestJobsOnDocker(t *testing.T) {
	prefix := fmt.Sprintf("airlocktest_jobs_%d_", os.Getpid())
	t.Cleanup(func() { dockertest.RemoveContainers(prefix) })
	ws := dockertest.Workspace(t)
	cfg := docker.DefaultConfig()
	cfg.Image = dockertest.Image(t)
	cfg.ContainerNamePrefix = prefix
	cfg.Volumes = []docker.Volume{{Host: ws, Container: "/workspace"}}
	cfg.Memory = 256 << 20
	cfg.KillGrace = 500 * time.Millisecond
	cfg.HelperBinary = dockertest.HelperBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, err := docker.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Close(context.Background()) })

	exerciseJobs(t, env, "/tmp/job-child.pid")
	exerciseLiveOutput(t, env, "/tmp/job-gate")
}

// exerciseLiveOutput reads a job's first line while the job still runs: the job waits for
// a file the test creates only once it has read that line.
func exerciseLiveOutput(t *testing.T, env backend.Environment, gate string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := jobs.NewManager(jobs.Options{})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	j, err := m.Start(jobs.Spec{SessionID: "s", Env: env, Request: backend.Request{
		Command: `echo first; echo warn >&2; while [ ! -e ` + gate + ` ]; do sleep 0.05; done; echo second`}})
	if err != nil {
		t.Fatal(err)
	}
	var early string
	for !strings.Contains(early, "first\n") || !strings.Contains(early, "warn\n") {
		text, in := j.Read(0)
		early += text
		if in.State != jobs.Running || !in.Streaming {
			t.Fatalf("job %+v before the gate opened; read %q", in, early)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no live output while the job ran: %q", early)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if res, err := env.Exec(ctx, backend.Request{Command: "touch " + gate}); err != nil || res.ExitCode != 0 {
		t.Fatalf("open the gate: %+v %v", res, err)
	}
	if err := j.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	rest, in := j.Read(0)
	if in.State != jobs.Exited || !in.Streaming || rest != "second\n" {
		t.Fatalf("job %+v, then %q after %q", in, rest, early)
	}
}

// exerciseJobs runs a job to its end and kills another's tree on env.
func exerciseJobs(t *testing.T, env backend.Environment, pidFile string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := jobs.NewManager(jobs.Options{})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	j, err := m.Start(jobs.Spec{SessionID: "s", Env: env, Request: backend.Request{Command: `for i in 1 2 3; do echo line $i; done; echo oops >&2; exit 7`}})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	text, in := j.Read(0)
	if in.State != jobs.Exited || in.ExitCode == nil || *in.ExitCode != 7 || !strings.Contains(text, "line 3\n") || !strings.Contains(text, "oops") {
		t.Fatalf("job: %+v output %q", in, text)
	}

	k, err := m.Start(jobs.Spec{SessionID: "s", Env: env, Request: backend.Request{Command: `sleep 300 & echo $! > ` + pidFile + `; wait`}})
	if err != nil {
		t.Fatal(err)
	}
	var pid string
	for i := 0; i < 500 && pid == ""; i++ {
		res, err := env.Exec(ctx, backend.Request{Command: "cat " + pidFile + " 2>/dev/null"})
		if err == nil {
			pid = strings.TrimSpace(string(res.Stdout))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if pid == "" {
		t.Fatal("job never started")
	}
	if in, err := m.Kill(ctx, "s", k.ID()); err != nil || in.State != jobs.Killed {
		t.Fatalf("kill: %+v %v", in, err)
	}
	for i := 0; ; i++ {
		// Exit 0 while the child lives (a zombie awaiting its reaper does not count).
		res, err := env.Exec(ctx, backend.Request{Command: "[ -e /proc/" + pid + " ] && ! grep -q '^State:.*Z' /proc/" + pid + "/status"})
		if err == nil && res.ExitCode != 0 {
			break
		}
		if i > 200 {
			t.Fatalf("job's child %s still alive in the container", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
