package agent

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/procgroup"
	"github.com/airlock-dev/airlock/backend/sandbox"
)

// BenchmarkExecTrue times one `sh -c true` through a client and a helper joined by in-memory
// pipes — the helper's own cost, without a container or an SSH connection — interleaved
// with a bare fork/exec of the same in its own process group, and reports both medians and
// their ratio. "sandboxed" gives the helper the kernel sandbox (where the kernel has it), as
// the SSH backend does by default; the environment is the size the SSH backend sends (the
// account's variables and the git overrides).
//
//	go test -run x -bench ExecTrue -benchtime 1000x ./backend/agent/
func BenchmarkExecTrue(b *testing.B) {
	if err := procgroup.EnableSubreaper(); err != nil { // as the helper is
		b.Skipf("subreaper: %v", err)
	}
	for _, sandboxed := range []bool{false, true} {
		name := "plain"
		if sandboxed {
			name = "sandboxed"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			opts := ServeOptions{}
			if sandboxed {
				if sandbox.KernelABI() < sandbox.RequiredABI {
					b.Skip("no Landlock")
				}
				sb, err := sandbox.New(sandbox.ModeLandlock, sandbox.Policy{WriteRoots: []string{dir}, TempDir: b.TempDir()})
				if err != nil {
					b.Fatal(err)
				}
				defer sb.Close()
				opts.Sandbox = sb
			}
			sr, cw := io.Pipe()
			cr, sw := io.Pipe()
			go func() { _ = Serve(context.Background(), sr, sw, opts); _ = sw.Close() }()
			c := NewClient(cr, cw, ClientOptions{})
			defer c.Close()
			env := append([]string{"HOME=" + dir, "USER=u", "LOGNAME=u", "PATH=/usr/bin:/bin"}, (backend.EnvPolicy{}).Build(nil, nil)...)
			req := Request{Command: "true", Dir: dir, Workspace: dir, Env: env, Timeout: 20 * time.Second}
			if _, err := c.Exec(context.Background(), req); err != nil {
				b.Fatal(err)
			}
			ours := make([]time.Duration, 0, b.N)
			raw := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				if res, err := c.Exec(context.Background(), req); err != nil || res.ExitCode != 0 {
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
		})
	}
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}
