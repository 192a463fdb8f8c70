package helper

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/backendtest"
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
//	go test -run x -bench ExecTrue -benchtime 1000x ./backend/helper/
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
			// OS pipes, as the helper's stream is: requests are then read as the helper
			// reads them (reader.go).
			sr, sw, cr, cw := osPipes(b)
			go func() { _ = Serve(context.Background(), sr, sw, opts); _ = sw.Close() }()
			c := NewClient(cr, cw, ClientOptions{})
			defer c.Close()
			env := append([]string{"HOME=" + dir, "USER=u", "LOGNAME=u", "PATH=/usr/bin:/bin"}, (backend.EnvPolicy{}).Build(nil, nil)...)
			req := Request{Command: "true", Dir: dir, Workspace: dir, Env: env, Timeout: 20 * time.Second}
			if _, err := c.Exec(context.Background(), req); err != nil {
				b.Fatal(err)
			}
			backendtest.BenchAgainstForkExec(b, func() error {
				res, err := c.Exec(context.Background(), req)
				if err == nil && res.ExitCode != 0 {
					err = fmt.Errorf("exit %d", res.ExitCode)
				}
				return err
			})
		})
	}
}
