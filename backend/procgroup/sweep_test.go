package procgroup

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func alive(pid string) bool {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	return err == nil && !strings.Contains(string(stat), ") Z ")
}

// TestSweepKillsWhatEscapedTheGroup: as a subreaper, Run kills a setsid'd grandchild when its
// command ends, and a sweep never touches another command that is still running.
func TestSweepKillsWhatEscapedTheGroup(t *testing.T) {
	if err := EnableSubreaper(); err != nil {
		t.Skipf("subreaper: %v", err)
	}
	dir := t.TempDir()
	var wg sync.WaitGroup
	wg.Add(1)
	var long Outcome
	go func() { // a command that must survive the other's sweep
		defer wg.Done()
		s := sh("sleep 2; echo survived > " + filepath.Join(dir, "long"))
		long, _ = Run(context.Background(), s)
	}()
	time.Sleep(200 * time.Millisecond)
	pidfile := filepath.Join(dir, "escaped")
	out, err := Run(context.Background(), sh("setsid sh -c 'echo $$ > "+pidfile+"; exec sleep 300' </dev/null >/dev/null 2>&1 & sleep 0.3"))
	if err != nil || out.ExitCode != 0 {
		t.Fatalf("run: %+v %v", out, err)
	}
	pid, _ := os.ReadFile(pidfile)
	if p := strings.TrimSpace(string(pid)); p == "" || alive(p) {
		t.Errorf("setsid'd process %q outlived its command", p)
	}
	wg.Wait()
	if got, _ := os.ReadFile(filepath.Join(dir, "long")); string(got) != "survived\n" || long.ExitCode != 0 {
		t.Errorf("the concurrent command was harmed by the sweep: %+v %q", long, got)
	}
}

// TestChildrenListsOrphans: an orphan handed to this process as a subreaper is on the
// children file that children reads, and children lists nothing that is not our child.
func TestChildrenListsOrphans(t *testing.T) {
	if err := EnableSubreaper(); err != nil {
		t.Skipf("subreaper: %v", err)
	}
	// The shell exits at once; its background sleep is handed to us. Run from goroutines on
	// other threads too, as commands are.
	var orphans []int
	for range 3 {
		var out strings.Builder
		cmd := exec.Command("/bin/sh", "-c", "sleep 30 </dev/null >/dev/null 2>&1 & echo $!")
		cmd.Stdout = &out
		if err := RunCmd(cmd); err != nil { // not reaped behind our back
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(out.String()))
		if err != nil {
			t.Fatal(err)
		}
		orphans = append(orphans, pid)
		// The file is kept open and read again: each read is current.
		if got := lockedChildren(); !slices.Contains(got, pid) {
			t.Errorf("orphan %d not listed when it is new: %v", pid, got)
		}
	}
	t.Cleanup(func() {
		for _, pid := range orphans {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		Sweep()
		for _, pid := range lockedChildren() {
			if slices.Contains(orphans, pid) {
				t.Errorf("orphan %d still listed after the sweep", pid)
			}
		}
	})
	got, all := lockedChildren(), scanChildren(os.Getpid())
	for _, pid := range orphans {
		if !slices.Contains(got, pid) {
			t.Errorf("orphan %d not listed: children() = %v, every child = %v", pid, got, all)
		}
	}
	for _, pid := range got {
		if !slices.Contains(all, pid) {
			t.Errorf("children() lists %d, which is not our child (%v)", pid, all)
		}
	}
}

// lockedChildren reads the children file under the lock its callers hold.
func lockedChildren() []int {
	leadersMu.Lock()
	defer leadersMu.Unlock()
	pids, _ := children()
	return pids
}

// TestOrphansReapedWhileACommandRuns: as a subreaper, an orphan a command leaves that dies
// while the command still runs is reaped then, not only when the command ends: a zombie
// holds its PID, and a fork bomb of such orphans would starve the process of them. Once at
// the command's start, and once after the wait has looked for dead orphans several times
// and found none (so looks less often).
func TestOrphansReapedWhileACommandRuns(t *testing.T) {
	if err := EnableSubreaper(); err != nil {
		t.Skipf("subreaper: %v", err)
	}
	for _, after := range []string{"0", "0.4"} {
		t.Run("after "+after+" s", func(t *testing.T) { orphanReaped(t, after) })
	}
}

// orphanReaped runs a command that leaves an orphan dying after the given seconds and
// checks that it is reaped within 2 s of its death while the command runs.
func orphanReaped(t *testing.T, after string) {
	dir := t.TempDir()
	pidfile, gate := filepath.Join(dir, "orphan"), filepath.Join(dir, "gate")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan Outcome, 1)
	go func() {
		// The subshell exits at once, leaving its child to us; the child writes its PID
		// and exits. The command runs on until the test removes the gate (10 s at most).
		s := sh(`(sh -c 'sleep ` + after + `; echo $$ > ` + pidfile + `' &); i=0; while [ -e ` + gate + ` ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done`)
		out, _ := Run(context.Background(), s)
		done <- out
	}()
	defer func() { _ = os.Remove(gate); <-done }()
	var pid string
	for deadline := time.Now().Add(5 * time.Second); pid == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(pidfile)
		if strings.HasSuffix(string(b), "\n") {
			pid = strings.TrimSpace(string(b))
		}
	}
	if pid == "" {
		t.Fatal("the orphan never wrote its PID")
	}
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if !zombieOfOurs(pid) {
			break // reaped (or the PID is another process's by now)
		}
		if time.Now().After(deadline) {
			stat, _ := os.ReadFile("/proc/" + pid + "/stat")
			t.Fatalf("orphan %s is still a zombie of ours 2 s after it died, while its command runs: %s", pid, stat)
		}
	}
	select {
	case out := <-done:
		t.Fatalf("the command ended before the check (%+v): the test proves nothing", out)
	default:
	}
}

// zombieOfOurs reports whether pid is a zombie whose parent is this process.
func zombieOfOurs(pid string) bool {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	i := strings.LastIndexByte(string(stat), ')')
	if err != nil || i < 0 {
		return false
	}
	f := strings.Fields(string(stat[i+1:])) // state, ppid, ...
	return len(f) > 1 && f[0] == "Z" && f[1] == strconv.Itoa(os.Getpid())
}
