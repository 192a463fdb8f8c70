package procgroup

import (
	"context"
	"os/exec"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkRunTrue times Run of sh -c true, as a subreaper (so every run ends with a sweep),
// against a bare fork/exec of the same, with and without 1,000 idle processes on the host
// that are not ours: the sweep must cost in proportion to our own children, not the host's.
//
//	go test -run x -bench RunTrue ./backend/procgroup/
func BenchmarkRunTrue(b *testing.B) {
	for _, idle := range []int{0, 1000} {
		b.Run("idle="+strconv.Itoa(idle), func(b *testing.B) {
			stop := startIdle(b, idle)
			defer stop()
			if err := EnableSubreaper(); err != nil {
				b.Skipf("subreaper: %v", err)
			}
			b.Run("raw", func(b *testing.B) {
				for range b.N {
					if err := RunCmd(exec.Command("/bin/sh", "-c", "true")); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("run", func(b *testing.B) {
				for range b.N {
					if out, err := Run(context.Background(), sh("true")); err != nil || out.ExitCode != 0 {
						b.Fatal(out, err)
					}
				}
			})
		})
	}
}

// startIdle starts n sleeps that are not this process's children: a shell leading a group
// of its own starts them and exits, so they go to init — unless this process is a subreaper
// already, which is why the benchmark turns that on only afterwards, and turns it off here.
func startIdle(b *testing.B, n int) func() {
	b.Helper()
	if n == 0 {
		return func() {}
	}
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	cmd := exec.Command("/bin/sh", "-c", `i=0; while [ "$i" -lt "$1" ]; do sleep 3600 </dev/null >/dev/null 2>&1 & i=$((i+1)); done`, "sh", strconv.Itoa(n))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Run(); err != nil {
		b.Fatal(err)
	}
	if subreaper.Load() {
		_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	}
	return func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
