//go:build linux

package sandbox_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/backend/sandbox"
)

type fixture struct {
	ws, outside, tmp, secret string
	sb                       *sandbox.Sandbox
}

func newFixture(t *testing.T, net sandbox.Network) *fixture {
	t.Helper()
	sandbox.RequireLandlock(t)
	base := t.TempDir()
	f := &fixture{
		ws:      filepath.Join(base, "ws"),
		outside: filepath.Join(base, "outside"),
		tmp:     filepath.Join(base, "tmp"),
	}
	for _, d := range []string{f.ws, f.outside, f.tmp, filepath.Join(f.ws, "sub"), filepath.Join(f.ws, "data")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.secret = filepath.Join(f.ws, "sub", ".env")
	for _, p := range []string{f.secret, filepath.Join(f.ws, "sub", "ok.txt"), filepath.Join(f.outside, "x"), filepath.Join(f.ws, "airlock.toml")} {
		if err := os.WriteFile(p, []byte("content\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sb, err := sandbox.New(sandbox.ModeLandlock, sandbox.Policy{
		ReadRoots:  []string{f.ws},
		WriteRoots: []string{f.ws},
		TempDir:    f.tmp,
		Protected:  []string{filepath.Join(f.ws, "airlock.toml")},
		Hidden:     func(rel string) bool { return strings.HasSuffix(rel, ".env") },
		Network:    net,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	f.sb = sb
	return f
}

func (f *fixture) sh(t *testing.T, script string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := f.sb.Do(func() error {
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Dir = f.ws
		cmd.Stdout, cmd.Stderr = &out, &out
		return cmd.Run()
	})
	return out.String(), err
}

func TestSandboxConfines(t *testing.T) {
	f := newFixture(t, sandbox.Network{})
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	pid := os.Getpid()
	denied := []struct{ name, script string }{
		{"write outside", "echo x > " + f.outside + "/new"},
		{"overwrite outside", "echo x > " + f.outside + "/x"},
		{"rm outside", "rm -f " + f.outside + "/x"},
		{"read protected", "cat " + f.ws + "/airlock.toml"},
		{"write protected", "echo x > " + f.ws + "/airlock.toml"},
		{"read hidden", "cat " + f.secret},
		{"read shadow", "cat /etc/shadow"},
		{"read environ", fmt.Sprintf("cat /proc/%d/environ", pid)},
		{"signal", fmt.Sprintf("kill -0 %d", pid)},
		{"tcp connect", fmt.Sprintf("python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", %d))'", port)},
		{"symlink then write", "ln -s " + f.outside + " " + f.ws + "/l && echo x > " + f.ws + "/l/via"},
		{"hard link", "ln " + f.outside + "/x " + f.ws + "/hl"},
		{"mv out", "mv " + f.ws + "/sub/ok.txt " + f.outside + "/moved"},
	}
	for _, tc := range denied {
		t.Run(tc.name, func(t *testing.T) {
			out, err := f.sh(t, tc.script)
			if err == nil {
				t.Fatalf("%q succeeded: %s", tc.script, out)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(f.outside, "x")); string(b) != "content\n" {
		t.Fatalf("outside file changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(f.outside, "new")); err == nil {
		t.Fatal("a file appeared outside")
	}
	allowed := []string{
		"echo x > data/new && cat data/new && echo y >> sub/ok.txt",
		"cat sub/ok.txt",
		"mkdir -p data/d && echo y > data/d/f && mv data/d/f data/g && ln -s g data/l && cat data/l && rm data/g data/l",
		"echo t > " + f.tmp + "/t && cat " + f.tmp + "/t",
		"ls /usr/bin >/dev/null",
		"git --version",
	}
	for _, s := range allowed {
		if out, err := f.sh(t, s); err != nil {
			t.Errorf("%q: %v: %s", s, err, out)
		}
	}
}

func TestProbeWithoutLandlock(t *testing.T) {
	none := sandbox.WithProbe(func() int { return 0 })
	_, err := sandbox.New(sandbox.ModeLandlock, sandbox.Policy{WriteRoots: []string{t.TempDir()}}, none)
	if !errors.Is(err, sandbox.ErrUnsupported) || !strings.Contains(err.Error(), "no Landlock") || !strings.Contains(err.Error(), `sandbox = "auto"`) {
		t.Fatalf("landlock mode on a kernel without it: %v", err)
	}
	old := sandbox.WithProbe(func() int { return 3 })
	if _, err := sandbox.New(sandbox.ModeLandlock, sandbox.Policy{}, old); err == nil || !strings.Contains(err.Error(), "ABI 3") {
		t.Fatalf("landlock mode on ABI 3: %v", err)
	}
	sb, err := sandbox.New(sandbox.ModeAuto, sandbox.Policy{}, none)
	if err != nil {
		t.Fatal(err)
	}
	if sb.Enforced() {
		t.Fatal("auto without Landlock claims enforcement")
	}
	if n := sb.Notes(); len(n) != 1 || !strings.Contains(n[0], "not enforced") {
		t.Fatalf("notes: %q", n)
	}
	ran := false
	if err := sb.Do(func() error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("unenforced Do: ran=%v err=%v", ran, err)
	}
	off, err := sandbox.New(sandbox.ModeOff, sandbox.Policy{})
	if err != nil || off.Enforced() || !strings.Contains(off.Notes()[0], `"off"`) {
		t.Fatalf("off: %v %q", err, off.Notes())
	}
}

func TestSplitDirectoryTakesNoNewEntries(t *testing.T) {
	f := newFixture(t, sandbox.Network{})
	// sub holds .env (deny_names): its other entries keep their rights, but nothing new can
	// be made directly in it — the documented price of keeping .env out.
	if out, err := f.sh(t, "echo x > sub/new"); err == nil {
		t.Fatalf("created a file beside a protected one: %s", out)
	}
	notes := strings.Join(f.sb.Notes(), "\n")
	if !strings.Contains(notes, filepath.Join(f.ws, "sub")) || !strings.Contains(notes, "enforced by Landlock") {
		t.Fatalf("notes do not name the split directory: %s", notes)
	}
}

// TestCommandCannotSignalTheStartingThread: the thread a command is started from shares its
// Landlock domain, so scoping alone would let the command signal it by its thread ID — and a
// signal to any thread is a signal to the whole process. The seccomp filter refuses signals
// aimed at the process's PID or that thread's ID.
func TestCommandCannotSignalTheStartingThread(t *testing.T) {
	f := newFixture(t, sandbox.Network{})
	pid := os.Getpid()
	out, err := f.sh(t, fmt.Sprintf(`for t in /proc/%d/task/*; do tid=${t##*/}; kill -0 $tid 2>/dev/null && echo "reached $tid"; done; python3 -c 'import os, signal
for t in os.listdir("/proc/%d/task"):
    try:
        os.kill(int(t), 0); print("py reached", t)
    except OSError: pass
    try:
        signal.pthread_kill
    except AttributeError: pass'; true`, pid, pid))
	if err != nil || strings.Contains(out, "reached") {
		t.Fatalf("a command could signal a thread of the process that started it: %v\n%s", err, out)
	}
}

// TestReplacedGrantedFileStaysReadable: Landlock binds a rule to the file it names, so a
// granted file replaced by a rename (useradd rewriting /etc/passwd, a file tool's atomic
// write beside a protected file) was unreadable to commands from then on. The sandbox sees
// the directory change and plans again before the next command: the new file is granted,
// one the host adds is granted too, and one that matches deny_names stays out.
func TestReplacedGrantedFileStaysReadable(t *testing.T) {
	f := newFixture(t, sandbox.Network{})
	ok := filepath.Join(f.ws, "sub", "ok.txt")
	if out, err := f.sh(t, "cat sub/ok.txt"); err != nil || out != "content\n" {
		t.Fatalf("before: %v %q", err, out)
	}
	tmp := filepath.Join(f.ws, "sub", ".ok.txt.tmp")
	if err := os.WriteFile(tmp, []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, ok); err != nil {
		t.Fatal(err)
	}
	if out, err := f.sh(t, "cat sub/ok.txt"); err != nil || out != "new\n" {
		t.Fatalf("after the rename: %v %q", err, out)
	}
	for name, body := range map[string]string{"added.txt": "added\n", "late.env": "SECRET=1\n"} {
		if err := os.WriteFile(filepath.Join(f.ws, "sub", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := f.sh(t, "cat sub/added.txt"); err != nil || out != "added\n" {
		t.Fatalf("a file the host added: %v %q", err, out)
	}
	if out, err := f.sh(t, "cat sub/late.env"); err == nil || strings.Contains(out, "SECRET") {
		t.Fatalf("a deny_names file added later was readable: %q", out)
	}
	if out, err := f.sh(t, "cat sub/.env"); err == nil || strings.Contains(out, "content") {
		t.Fatalf("the protected file became readable after planning again: %q", out)
	}
}

// TestRegenerationUnderConcurrentCommands: commands keep starting while a stamped directory
// keeps changing, so generations are retired while other commands are joining them. Under
// the race detector this caught a worker added to a generation whose retirement was already
// waiting for its last worker (and would have closed the ruleset under it).
func TestRegenerationUnderConcurrentCommands(t *testing.T) {
	f := newFixture(t, sandbox.Network{})
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		go func() {
			for i := 0; i < 15; i++ {
				// A command that starts while the file is being replaced may still hold the
				// old grant (the next one is planned again); what must never fail is the
				// sandbox itself: restricting a thread, or running at all.
				if out, err := f.sh(t, "true"); err != nil {
					errs <- fmt.Errorf("command %d: %v: %s", i, err, out)
					return
				}
			}
			errs <- nil
		}()
	}
	tmp := filepath.Join(f.ws, "sub", ".ok.tmp")
	for i := 0; i < 30; i++ {
		if err := os.WriteFile(tmp, []byte("content\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(f.ws, "sub", "ok.txt")); err != nil {
			t.Fatal(err)
		}
	}
	for w := 0; w < 4; w++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestHeldWorkerStartsNothingElse: a command started through Hold keeps its worker, and so
// its Landlock domain, to itself until released. A command started meanwhile comes from
// another worker, in a domain of its own, and cannot signal the first.
func TestHeldWorkerStartsNothingElse(t *testing.T) {
	f := newFixture(t, sandbox.Network{})
	held := exec.Command("/bin/sleep", "30")
	release, err := f.sb.Hold(held.Start)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = held.Process.Kill()
		_ = held.Wait()
		release()
	})
	for i := 0; i < 3; i++ { // whichever idle worker comes next
		if out, err := f.sh(t, fmt.Sprintf("kill -0 %d", held.Process.Pid)); err == nil {
			t.Fatalf("a command signalled another command that is running: %s", out)
		}
	}
	_ = held.Process.Kill()
	_ = held.Wait()
	release()
	release() // a second call is a no-op
}

// TestGoRunsRestrictedAndHoldsItsWorker: a function given to Go runs on a restricted thread
// (it cannot read outside the roots), Go returns while it still runs, and its worker starts
// nothing else until it has returned: a command started meanwhile comes from another worker
// and cannot signal the one it started. Go takes only a worker already waiting for a job.
func TestGoRunsRestrictedAndHoldsItsWorker(t *testing.T) {
	f := newFixture(t, sandbox.Network{})
	if _, err := f.sh(t, "true"); err != nil { // the first call makes the workers
		t.Fatal(err)
	}
	type started struct {
		pid     int
		readErr error
		err     error
	}
	ready := make(chan started, 1)
	stop, done := make(chan struct{}), make(chan struct{})
	run := func(restricted error) {
		defer close(done)
		if restricted != nil {
			ready <- started{err: restricted}
			return
		}
		_, readErr := os.ReadFile(filepath.Join(f.outside, "x"))
		held := exec.Command("/bin/sleep", "30")
		if err := held.Start(); err != nil {
			ready <- started{err: err}
			return
		}
		ready <- started{pid: held.Process.Pid, readErr: readErr}
		<-stop
		_ = held.Process.Kill()
		_ = held.Wait()
	}
	var ok bool
	var err error
	for deadline := time.Now().Add(5 * time.Second); !ok && err == nil && time.Now().Before(deadline); {
		if ok, err = f.sb.Go(run); !ok && err == nil {
			time.Sleep(10 * time.Millisecond) // the workers are still restricting their threads
		}
	}
	if !ok || err != nil {
		t.Fatalf("no idle worker took the function: %v", err)
	}
	s := <-ready
	if s.err != nil {
		t.Fatal(s.err)
	}
	defer func() { close(stop); <-done }()
	if s.readErr == nil {
		t.Error("the function read a file outside the roots: it did not run restricted")
	}
	for i := 0; i < 3; i++ { // whichever idle worker comes next
		if out, err := f.sh(t, fmt.Sprintf("kill -0 %d", s.pid)); err == nil {
			t.Fatalf("a command signalled the command a held worker started: %s", out)
		}
	}
}

// TestLendRunsRestrictedWithoutWaiting: a function given to Lend runs on a restricted thread
// (it cannot read outside the roots) that nothing else holds while it runs, and Lend returns
// at once even when no worker is waiting (it makes one): two functions lent one after the
// other, the first still running, run on two threads. Current is true until a stamped
// directory changes, and a closed sandbox lends nothing.
func TestLendRunsRestrictedWithoutWaiting(t *testing.T) {
	f := newFixture(t, sandbox.Network{})
	type lent struct {
		w       *sandbox.Worker
		tid     int
		readErr error
		err     error
	}
	got := make(chan lent, 2)
	stop := make(chan struct{})
	var done sync.WaitGroup
	fn := func(w *sandbox.Worker, restricted error) {
		defer done.Done()
		_, readErr := os.ReadFile(filepath.Join(f.outside, "x"))
		got <- lent{w: w, tid: unix.Gettid(), readErr: readErr, err: restricted}
		<-stop
	}
	done.Add(2)
	for i := 0; i < 2; i++ {
		if err := f.sb.Lend(fn); err != nil {
			t.Fatal(err)
		}
	}
	a, b := <-got, <-got
	defer func() { close(stop); done.Wait() }()
	for _, l := range []lent{a, b} {
		switch {
		case l.err != nil || l.w == nil:
			t.Fatalf("lent function got no restricted thread: %v", l.err)
		case l.readErr == nil:
			t.Error("a lent function read a file outside the roots: it did not run restricted")
		case l.tid == os.Getpid():
			t.Error("a lent function ran on the main thread")
		case !l.w.Current():
			t.Error("a worker of the only generation is not current")
		}
	}
	if a.tid == b.tid {
		t.Fatalf("two lent functions running at once shared thread %d", a.tid)
	}
	// A stamped directory changes (a granted file replaced by a rename): the workers
	// restricted before are an older generation's once the next command plans again.
	tmp := filepath.Join(f.ws, "sub", ".ok.tmp")
	if err := os.WriteFile(tmp, []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(f.ws, "sub", "ok.txt")); err != nil {
		t.Fatal(err)
	}
	if a.w.Current() {
		t.Error("a worker restricted before a stamped directory changed is still current")
	}
	f.sb.Close()
	if err := f.sb.Lend(func(*sandbox.Worker, error) { t.Error("a closed sandbox lent a thread") }); err == nil {
		t.Error("Lend on a closed sandbox did not fail")
	}
}

// TestWarmMakesWorkersAhead: after Warm, a worker waits for a job before any command was
// run, so Go (which takes only a waiting worker) finds one; without it, Go finds none
// until a first command made them.
func TestWarmMakesWorkersAhead(t *testing.T) {
	f := newFixture(t, sandbox.Network{})
	if ok, err := f.sb.Go(func(error) {}); ok || err != nil {
		t.Fatalf("Go found a worker before any was made: %v %v", ok, err)
	}
	f.sb.Warm()
	done := make(chan error, 1)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		ok, err := f.sb.Go(func(restricted error) { done <- restricted })
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no worker waited for a job 5 s after Warm")
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("the warmed worker is not restricted: %v", err)
	}
}

// TestLendAcrossAStampChange: a worker lends to its own generation without looking at the
// stamps (Worker.Lend), so after a stamped directory changed the worker it lends to is not
// Current, and a reader that asks first starts nothing there; the sandbox's Lend, called
// from that restricted thread, plans the new generation (off the thread) and gives a current
// worker, which reads the file that replaced a granted one.
func TestLendAcrossAStampChange(t *testing.T) {
	f := newFixture(t, sandbox.Network{})
	type got struct {
		current bool
		read    string
		err     error
	}
	res := make(chan got, 2)
	probe := func(w *sandbox.Worker, restricted error) {
		if restricted != nil || w == nil {
			res <- got{err: fmt.Errorf("no restricted thread: %v", restricted)}
			return
		}
		b, err := os.ReadFile(filepath.Join(f.ws, "sub", "ok.txt"))
		res <- got{current: w.Current(), read: string(b), err: err}
	}
	lent, changed := make(chan error, 1), make(chan struct{})
	if err := f.sb.Lend(func(w *sandbox.Worker, restricted error) {
		if w == nil {
			lent <- fmt.Errorf("no restricted thread: %v", restricted)
			return
		}
		<-changed
		lent <- errors.Join(w.Lend(probe), f.sb.Lend(probe))
	}); err != nil {
		t.Fatal(err)
	}
	// The host replaces a granted file while the worker waits (a split directory takes no
	// new entries from a restricted thread).
	tmp := filepath.Join(f.ws, "sub", ".ok.tmp")
	if err := os.WriteFile(tmp, []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(f.ws, "sub", "ok.txt")); err != nil {
		t.Fatal(err)
	}
	close(changed)
	if err := <-lent; err != nil {
		t.Fatal(err)
	}
	a, b := <-res, <-res
	if a.current == b.current {
		t.Fatalf("one worker lent after the change should be current and one not: %+v, %+v", a, b)
	}
	if !a.current {
		a, b = b, a
	}
	if a.err != nil || a.read != "new\n" {
		t.Errorf("the current worker could not read the replaced file: %v %q", a.err, a.read)
	}
}

// TestLendToAWorkerComingBack: a worker lists itself idle as it finishes a lent function,
// before it is back at its channel. A function lent in that window goes to that worker, which
// runs it once back, and no new thread is restricted for it: handing over failed there, and
// every such failure made a thread more, for good.
func TestLendToAWorkerComingBack(t *testing.T) {
	f := newFixture(t, sandbox.Network{})
	listed, release := make(chan struct{}), make(chan struct{})
	f.sb.SetAfterPut(func() {
		listed <- struct{}{}
		<-release
	})
	ran := make(chan int, 1)
	fn := func(w *sandbox.Worker, restricted error) {
		if w == nil {
			t.Errorf("no restricted thread: %v", restricted)
		}
		ran <- unix.Gettid()
	}
	lend := func() {
		t.Helper()
		if err := f.sb.Lend(fn); err != nil {
			t.Fatal(err)
		}
	}
	const rounds = 20
	for i := 0; i < rounds; i++ {
		lend()
		first := <-ran
		<-listed // the worker is listed idle and not yet back at its channel
		lend()
		release <- struct{}{}
		if second := <-ran; second != first {
			t.Fatalf("round %d: lent while thread %d came back, ran on thread %d", i, first, second)
		}
		<-listed
		release <- struct{}{}
	}
	if n := f.sb.Spawned(); n != 1 {
		t.Fatalf("%d workers made for %d functions lent one after another; want 1", n, 2*rounds)
	}
}

// TestFilterLeavesSpeculationAlone: a restricted thread, and so every command it starts,
// keeps the speculation controls of the threads around it. A filter installed without
// SECCOMP_FILTER_FLAG_SPEC_ALLOW force-disables speculative store bypass and indirect branch
// speculation wherever the kernel ties those mitigations to seccomp (before 5.16, or
// spec_store_bypass_disable=seccomp): an IBPB at every switch to or from a command, and
// slower commands. Where the processor offers neither control to processes (the machine CI
// runs on), the filter can change nothing and the test skips.
func TestFilterLeavesSpeculationAlone(t *testing.T) {
	f := newFixture(t, sandbox.Network{})
	read := func() (ssb, ib int) {
		ssb, _ = unix.PrctlRetInt(unix.PR_GET_SPECULATION_CTRL, unix.PR_SPEC_STORE_BYPASS, 0, 0, 0)
		ib, _ = unix.PrctlRetInt(unix.PR_GET_SPECULATION_CTRL, unix.PR_SPEC_INDIRECT_BRANCH, 0, 0, 0)
		return ssb, ib
	}
	runtime.LockOSThread()
	outSSB, outIB := read()
	runtime.UnlockOSThread()
	if outSSB&unix.PR_SPEC_PRCTL == 0 && outIB&unix.PR_SPEC_PRCTL == 0 {
		t.Skipf("this processor offers processes no speculation control (store bypass %#x, indirect branch %#x): a filter cannot change them here", outSSB, outIB)
	}
	var inSSB, inIB int
	if err := f.sb.Do(func() error { inSSB, inIB = read(); return nil }); err != nil {
		t.Fatal(err)
	}
	t.Logf("store bypass %#x, indirect branch %#x outside; %#x, %#x on a restricted thread", outSSB, outIB, inSSB, inIB)
	if inSSB != outSSB || inIB != outIB {
		t.Fatalf("the filter changed the thread's speculation controls: store bypass %#x → %#x, indirect branch %#x → %#x", outSSB, inSSB, outIB, inIB)
	}
	out, err := f.sh(t, "grep ^Speculation /proc/self/status")
	if err != nil || strings.Contains(out, "force mitigated") {
		t.Fatalf("a command's speculation controls (%v):\n%s", err, out)
	}
}
