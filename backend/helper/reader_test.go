package helper

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/backend/sandbox"
)

// sandboxedPair is pair over OS pipes, as the helper's stream is, with the server's commands
// under a Landlock sandbox; it returns the client and the descriptor the server reads.
func sandboxedPair(t *testing.T) (*Client, int, string) {
	t.Helper()
	if abi := sandbox.KernelABI(); abi < sandbox.RequiredABI {
		if os.Getenv("AIRLOCK_REQUIRE_LANDLOCK") == "1" {
			t.Fatalf("Landlock ABI %d, need %d", abi, sandbox.RequiredABI)
		}
		t.Skipf("Landlock ABI %d, need %d", abi, sandbox.RequiredABI)
	}
	// Not a subreaper, as the helper is: the test process's other tests run go build, whose
	// processes a subreaper's sweep after every command would take for escapees.
	dir := t.TempDir()
	sb, err := sandbox.New(sandbox.ModeLandlock, sandbox.Policy{WriteRoots: []string{dir}, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sr, sw, cr, cw := osPipes(t)
	fd := int(sr.Fd()) // before Serve: the helper's standard input is as blocking as this
	t.Cleanup(func() { sb.Close() })
	c := serveFor(t, sr, sw, cr, cw, ServeOptions{Sandbox: sb}, func() { _ = sw.Close() })
	return c, fd, dir
}

// TestRequestsReadOnRestrictedThreads: where commands start from the sandbox's restricted
// threads, the thread that waits for the request after a command's is one of them, in a
// read(2) of the stream (reader.go), so that a command needs no hand-over to another
// thread; commands one after another are all read, run and answered by the same thread.
// Commands one after another, at once, with standard input and cancelled, all work with
// the reading passed from thread to thread and to a goroutine and back.
func TestRequestsReadOnRestrictedThreads(t *testing.T) {
	c, fd, dir := sandboxedPair(t)
	ctx := ctxFor(t)
	req := func(cmd string) Request {
		r := shReq(dir, cmd)
		r.Workspace = dir
		return r
	}
	var first string
	for i := 0; i < 5; i++ {
		res, err := c.Exec(ctx, req(fmt.Sprintf("echo %d", i)))
		if err != nil || res.ExitCode != 0 || string(res.Stdout) != fmt.Sprintf("%d\n", i) {
			t.Fatalf("command %d: %v exit %d %q %q", i, err, res.ExitCode, res.Stdout, res.Stderr)
		}
		switch tid := checkReader(t, fd); {
		case i == 0:
			first = tid
		case tid != first:
			t.Fatalf("command %d: the reading passed from thread %s to %s though nothing came while a command ran", i, first, tid)
		}
	}
	// Commands at once run at once: each waits until all have started, which they could
	// not do if the reading stayed with the first command's thread.
	meet := filepath.Join(dir, "meet")
	if err := os.Mkdir(meet, 0o755); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := fmt.Sprintf(`touch meet/%d; n=0; while [ "$(ls meet | wc -l)" -lt 4 ] && [ $n -lt 1000 ]; do sleep 0.01; n=$((n+1)); done; ls meet | wc -l; echo %d`, i, i)
			res, err := c.Exec(ctx, req(cmd))
			if err != nil || string(res.Stdout) != fmt.Sprintf("4\n%d\n", i) {
				t.Errorf("command %d at once: %v %q %q", i, err, res.Stdout, res.Stderr)
			}
		}()
	}
	wg.Wait()
	in := req("cat")
	in.Stdin = strings.NewReader("through stdin\n")
	if res, err := c.Exec(ctx, in); err != nil || string(res.Stdout) != "through stdin\n" {
		t.Fatalf("stdin: %v %q %q", err, res.Stdout, res.Stderr)
	}
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _ = c.Exec(cctx, req("sleep 30"))
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("a cancelled command ran on for %v", took)
	}
	// After frames other than starts (stdin, a cancel) a goroutine reads; after the next
	// command's start, a restricted thread again.
	if res, err := c.Exec(ctx, req("echo again")); err != nil || string(res.Stdout) != "again\n" {
		t.Fatalf("after the cancel: %v %q %q", err, res.Stdout, res.Stderr)
	}
	checkReader(t, fd)
}

// checkReader fails t unless the thread that waits in read(2) on fd (there is one once
// the last answer was sent, soon) carries the sandbox: no_new_privs and a seccomp filter.
// It returns the thread's ID.
func checkReader(t *testing.T, fd int) string {
	t.Helper()
	var last string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		tid, ok := readerThread(fd)
		if !ok {
			last = "no thread is in read(2) on the stream"
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc/self/task", tid, "status"))
		if err != nil {
			last = err.Error()
			continue
		}
		if !strings.Contains(string(status), "NoNewPrivs:\t1") || !strings.Contains(string(status), "Seccomp:\t2") {
			t.Fatalf("the thread reading requests (%s) is not restricted:\n%s", tid, status)
		}
		if tid == strconv.Itoa(os.Getpid()) {
			t.Fatal("the main thread reads requests")
		}
		return tid
	}
	t.Fatal(last)
	return ""
}

// readerThread finds the thread of this process blocked in read(2) on fd, from
// /proc/self/task/TID/syscall ("NR 0xFD ...").
func readerThread(fd int) (string, bool) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return "", false
	}
	want := fmt.Sprintf("%d 0x%x ", unix.SYS_READ, fd)
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "syscall"))
		if err == nil && strings.HasPrefix(string(b), want) {
			return task.Name(), true
		}
	}
	return "", false
}
