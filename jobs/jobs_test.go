package jobs_test

import (
	"context"
	"fmt"
	"github.com/airlock-dev/airlock/internal/proctest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/jobs"
	"github.com/airlock-dev/airlock/receipt"
)

func newEnv(t *testing.T) (backend.Environment, string) {
	t.Helper()
	dir := t.TempDir()
	env, err := local.New(local.Config{Workspace: dir})
	t.Cleanup(func() { _ = env.Close(context.Background()) })
	if err != nil {
		t.Fatal(err)
	}
	return env, dir
}

func newLedger(t *testing.T) (*receipt.Ledger, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "receipts.jsonl")
	l, err := receipt.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, path
}

// Output read in pieces while the job runs comes back whole, in order, each line once.
func TestReadsNeitherLoseNorRepeat(t *testing.T) {
	t.Parallel()
	env, _ := newEnv(t)
	ledger, path := newLedger(t)
	m := jobs.NewManager(jobs.Options{Ledger: ledger})
	t.Cleanup(func() { _ = m.Close(context.Background()) })

	j, err := m.Start(jobs.Spec{SessionID: "s1", CallID: "c1", Env: env,
		Request: backend.Request{Command: `i=0; while [ $i -lt 400 ]; do echo "line $i"; i=$((i+1)); [ $((i % 50)) = 0 ] && sleep 0.05; done`}})
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for reads := 0; ; reads++ {
		text, in := j.Read(333) // small reads cut lines in two: the next read must go on from there
		got.WriteString(text)
		if in.State != jobs.Running && in.UnreadBytes == 0 {
			if in.State != jobs.Exited || in.ExitCode == nil || *in.ExitCode != 0 {
				t.Fatalf("ended as %+v", in)
			}
			if in.ReadBytes != in.TotalBytes || in.DroppedBytes != 0 {
				t.Fatalf("totals %+v", in)
			}
			break
		}
		if reads > 10000 {
			t.Fatal("job never ended")
		}
		time.Sleep(2 * time.Millisecond)
	}
	lines := strings.Split(strings.TrimSuffix(got.String(), "\n"), "\n")
	if len(lines) != 400 {
		t.Fatalf("%d lines", len(lines))
	}
	for i, l := range lines {
		if l != fmt.Sprintf("line %d", i) {
			t.Fatalf("line %d is %q", i, l)
		}
	}
	_ = ledger.Close()
	events := ledgerEvents(t, path)
	if strings.Join(events, ",") != "job_started,job_ended" {
		t.Fatalf("ledger events %v", events)
	}
}

func ledgerEvents(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := receipt.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range lines {
		out = append(out, l.Event)
		if l.Event == receipt.EventJobEnded && (l.Receipt.Outcome != receipt.Executed || l.Receipt.ExitCode == nil || l.Receipt.JobID == "") {
			t.Errorf("job_ended receipt %+v", l.Receipt)
		}
	}
	return out
}

// A kill ends the job's whole tree, including what it put in the background.
func TestKillEndsTheTree(t *testing.T) {
	t.Parallel()
	env, dir := newEnv(t)
	m := jobs.NewManager(jobs.Options{})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	pidFile := filepath.Join(dir, "child.pid")
	j, err := m.Start(jobs.Spec{SessionID: "s", Env: env,
		Request: backend.Request{Command: `sleep 300 & echo "$! $(readlink /proc/self/ns/pid)" > child.pid; echo started; wait`}})
	if err != nil {
		t.Fatal(err)
	}
	pid := waitPid(t, pidFile)
	in, err := m.Kill(context.Background(), "s", j.ID())
	if err != nil {
		t.Fatal(err)
	}
	if in.State != jobs.Killed || in.Reason != "killed" {
		t.Fatalf("after kill: %+v", in)
	}
	assertGone(t, pid)
	if text, _ := j.Read(0); !strings.Contains(text, "started") {
		t.Fatalf("output after kill %q", text)
	}
	if _, err := m.Kill(context.Background(), "other-session", j.ID()); err == nil {
		t.Fatal("another session killed the job")
	}
}

// waitPid waits for a command to record a process as proctest.Record spells it, and for
// that process to be found running from the host; it returns the record.
func waitPid(t *testing.T, path string) string {
	t.Helper()
	for i := 0; i < 1000; i++ {
		if b, err := os.ReadFile(path); err == nil && len(strings.Fields(string(b))) == 2 {
			if _, alive := proctest.Alive(string(b)); alive {
				return string(b)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no running process recorded in %s", path)
	return ""
}

// assertGone waits for the recorded process to end (a zombie counts as ended).
func assertGone(t *testing.T, rec string) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if _, alive := proctest.Alive(rec); !alive {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	pid, _ := proctest.Alive(rec)
	t.Fatalf("process %s (host PID %d) still alive", strings.TrimSpace(rec), pid)
}

// Closing a session kills its jobs and forgets them; other sessions' jobs go on.
func TestCloseSessionKillsOnlyItsJobs(t *testing.T) {
	t.Parallel()
	env, dir := newEnv(t)
	m := jobs.NewManager(jobs.Options{})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	a, err := m.Start(jobs.Spec{SessionID: "a", Env: env, Request: backend.Request{Command: `echo "$$ $(readlink /proc/self/ns/pid)" > a.pid; exec sleep 300`}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Start(jobs.Spec{SessionID: "b", Env: env, Request: backend.Request{Command: `sleep 300`}})
	if err != nil {
		t.Fatal(err)
	}
	pid := waitPid(t, filepath.Join(dir, "a.pid"))
	m.CloseSession(context.Background(), "a")
	assertGone(t, pid)
	if _, err := m.Get("a", a.ID()); err == nil {
		t.Fatal("closed session's job still listed")
	}
	if in := b.Info(); in.State != jobs.Running {
		t.Fatalf("other session's job: %+v", in)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if in := b.Info(); in.State != jobs.Killed {
		t.Fatalf("after Close: %+v", in)
	}
	if _, err := m.Start(jobs.Spec{SessionID: "b", Env: env, Request: backend.Request{Command: "true"}}); err == nil {
		t.Fatal("start after Close")
	}
}

// Output past the buffer drops the oldest unread bytes and says how many.
func TestBufferDropsOldestAndCounts(t *testing.T) {
	t.Parallel()
	env, _ := newEnv(t)
	m := jobs.NewManager(jobs.Options{BufferBytes: 1000})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	j, err := m.Start(jobs.Spec{SessionID: "s", Env: env, Request: backend.Request{Command: `i=0; while [ $i -lt 500 ]; do echo "row $i"; i=$((i+1)); done; echo END`}})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	text, in := j.Read(0)
	if in.DroppedBytes == 0 || in.DroppedBytes+in.ReadBytes != in.TotalBytes || len(text) != 1000 || !strings.HasSuffix(text, "END\n") {
		t.Fatalf("info %+v, kept %d bytes ending %q", in, len(text), text[len(text)-10:])
	}
}

// A session may run only so many jobs at once.
func TestMaxRunning(t *testing.T) {
	t.Parallel()
	env, _ := newEnv(t)
	m := jobs.NewManager(jobs.Options{MaxRunning: 1})
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	if _, err := m.Start(jobs.Spec{SessionID: "s", Env: env, Request: backend.Request{Command: "sleep 300"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Start(jobs.Spec{SessionID: "s", Env: env, Request: backend.Request{Command: "sleep 300"}}); err == nil {
		t.Fatal("second job started")
	}
}
