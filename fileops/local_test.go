package fileops_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/backend/sandbox"
	"github.com/airlock-dev/airlock/fileops/fileopstest"
)

func newLocal(t *testing.T) *local.Env {
	t.Helper()
	env, err := local.New(local.Config{Workspace: t.TempDir()})
	if err != nil {
		t.Fatalf("local.New: %v", err)
	}
	t.Cleanup(func() { _ = env.Close(context.Background()) })
	return env
}

// TestLocal runs the suite on the local backend as configured by default: files are opened
// by descriptor in the session's helper, in its namespaces where the host allows.
func TestLocal(t *testing.T) {
	fileopstest.Run(t, func(t *testing.T) backend.Environment { return newLocal(t) })
}

// remoteLike hides backend.HostDir, so that the tools take the road they take in a
// container or over SSH: shell commands with their own re-checks.
type remoteLike struct{ backend.Environment }

// TestLocalShell runs the suite on the local backend through the shell road.
func TestLocalShell(t *testing.T) {
	fileopstest.Run(t, func(t *testing.T) backend.Environment { return remoteLike{newLocal(t)} })
}

// busyboxOnly runs every command with nothing but busybox applets on PATH, as in a minimal
// container image: the shell road must not depend on GNU flags or on ripgrep.
type busyboxOnly struct {
	backend.Environment
	dir string
}

func (b busyboxOnly) Exec(ctx context.Context, req backend.Request) (backend.Result, error) {
	env := map[string]string{"PATH": b.dir}
	for k, v := range req.Env {
		env[k] = v
	}
	req.Env = env
	if len(req.Argv) > 0 && !filepath.IsAbs(req.Argv[0]) {
		argv := append([]string(nil), req.Argv...)
		argv[0] = filepath.Join(b.dir, argv[0])
		req.Argv = argv
	}
	return b.Environment.Exec(ctx, req)
}

// TestLocalBusybox runs the suite through the shell road with only busybox utilities.
func TestLocalBusybox(t *testing.T) {
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Skip("busybox is not installed")
	}
	dir := t.TempDir()
	list, err := exec.Command(bb, "--list").Output()
	if err != nil {
		t.Fatalf("busybox --list: %v", err)
	}
	for _, applet := range strings.Fields(string(list)) {
		if err := os.Symlink(bb, filepath.Join(dir, applet)); err != nil {
			t.Fatal(err)
		}
	}
	fileopstest.Run(t, func(t *testing.T) backend.Environment {
		env, err := local.New(local.Config{Workspace: t.TempDir(), Shell: filepath.Join(dir, "sh")})
		if err != nil {
			t.Fatalf("local.New: %v", err)
		}
		t.Cleanup(func() { _ = env.Close(context.Background()) })
		return busyboxOnly{Environment: env, dir: dir}
	})
}

func newLocalMode(t *testing.T, mode sandbox.Mode) *local.Env {
	t.Helper()
	env, err := local.New(local.Config{Workspace: t.TempDir(), Sandbox: local.SandboxConfig{Mode: mode}})
	if err != nil {
		t.Fatalf("local.New: %v", err)
	}
	t.Cleanup(func() { _ = env.Close(context.Background()) })
	return env
}

// TestLocalShellSandboxed runs the suite on the shell road with the kernel sandbox required
// (the file tools' commands then run under Landlock), and TestLocalShellUnsandboxed with it
// off; newLocal above is the default, auto.
func TestLocalShellSandboxed(t *testing.T) {
	if sandbox.KernelABI() < sandbox.RequiredABI {
		t.Skip("no Landlock")
	}
	fileopstest.Run(t, func(t *testing.T) backend.Environment { return remoteLike{newLocalMode(t, sandbox.ModeLandlock)} })
}

func TestLocalShellUnsandboxed(t *testing.T) {
	fileopstest.Run(t, func(t *testing.T) backend.Environment { return remoteLike{newLocalMode(t, sandbox.ModeOff)} })
}

// TestLocalFallback runs the suite on the local backend's fallback: the helper without
// namespaces, Landlock + seccomp required (file operations still run in the helper).
func TestLocalFallback(t *testing.T) {
	if sandbox.KernelABI() < sandbox.RequiredABI {
		t.Skip("no Landlock")
	}
	fileopstest.Run(t, func(t *testing.T) backend.Environment { return newLocalMode(t, sandbox.ModeLandlock) })
}
