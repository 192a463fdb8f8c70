package agent

import (
	"context"
	"io"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend/procgroup"
)

// BenchmarkExecTrue times one `sh -c true` through a client and a helper joined by in-memory
// pipes — the helper's own cost, without a container or an SSH connection — against a bare
// fork/exec of the same in its own process group.
//
//	go test -run x -bench ExecTrue ./backend/agent/
func BenchmarkExecTrue(b *testing.B) {
	b.Run("raw", func(b *testing.B) {
		for range b.N {
			cmd := exec.Command("/bin/sh", "-c", "true")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := procgroup.RunCmd(cmd); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("helper", func(b *testing.B) {
		sr, cw := io.Pipe()
		cr, sw := io.Pipe()
		go func() { _ = Serve(context.Background(), sr, sw, ServeOptions{}); _ = sw.Close() }()
		c := NewClient(cr, cw, ClientOptions{})
		defer c.Close()
		dir := b.TempDir()
		req := Request{Command: "true", Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}, Timeout: 20 * time.Second}
		b.ResetTimer()
		for range b.N {
			if res, err := c.Exec(context.Background(), req); err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
		}
	})
}
