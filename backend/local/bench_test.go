package local

import (
	"context"
	"fmt"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/backendtest"
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
	backendtest.BenchAgainstForkExec(b, func() error {
		res, err := e.Exec(ctx, req)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
		}
		return err
	})
}
