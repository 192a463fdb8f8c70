package procgroup

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// TestChildrenListsOurs: the children files name exactly the processes whose parent we are,
// as a scan of every process's stat does.
func TestChildrenListsOurs(t *testing.T) {
	var cmds []*exec.Cmd
	for range 3 {
		c := exec.Command("sleep", "30")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	t.Cleanup(func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	got, want := children(), scanChildren(os.Getpid())
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("children() = %v, scan = %v", got, want)
	}
	for _, c := range cmds {
		if !slices.Contains(got, c.Process.Pid) {
			t.Errorf("child %d not listed in %v", c.Process.Pid, got)
		}
	}
}
