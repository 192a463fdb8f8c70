package local

import (
	"bytes"
	"context"
	"os/exec"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/procgroup"
)

// BenchmarkExecTrue times `sh -c true` through Env.Exec (sandboxed where the kernel allows)
// interleaved with a raw fork/exec of the same in its own process group, and reports both
// medians and their ratio: whatever else the machine does weighs on both alike.
//
//	go test -run x -bench ExecTrue -benchtime 1000x ./backend/local/
func BenchmarkExecTrue(b *testing.B) {
	e, err := New(Config{Workspace: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close(context.Background())
	ctx := context.Background()
	req := backend.Request{Command: "true"}
	if _, err := e.Exec(ctx, req); err != nil {
		b.Fatal(err)
	}
	ours := make([]time.Duration, 0, b.N)
	raw := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		res, err := e.Exec(ctx, req)
		if err != nil || res.ExitCode != 0 {
			b.Fatal(res, err)
		}
		ours = append(ours, time.Since(start))
		cmd := exec.Command("/bin/sh", "-c", "true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var out, errb bytes.Buffer // its output captured, as a backend captures it
		cmd.Stdout, cmd.Stderr = &out, &errb
		start = time.Now()
		if err := procgroup.RunCmd(cmd); err != nil {
			b.Fatal(err)
		}
		raw = append(raw, time.Since(start))
	}
	b.StopTimer()
	o, r := median(ours), median(raw)
	b.ReportMetric(float64(o.Microseconds()), "exec-p50-µs")
	b.ReportMetric(float64(r.Microseconds()), "raw-p50-µs")
	b.ReportMetric(float64(o)/float64(r), "ratio")
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}
