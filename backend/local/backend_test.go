package local_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/backendtest"
	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/backend/sandbox"
)

func newEnvMode(mode sandbox.Mode) backendtest.NewEnv {
	return func(t *testing.T) backend.Environment {
		t.Helper()
		env, err := local.New(local.Config{Workspace: t.TempDir(), Sandbox: local.SandboxConfig{Mode: mode}})
		if err != nil {
			t.Fatalf("local.New: %v", err)
		}
		t.Cleanup(func() { _ = env.Close(context.Background()) })
		return env
	}
}

func TestConformance(t *testing.T) {
	backendtest.Run(t, newEnvMode(sandbox.ModeOff))
}

// TestConformanceNamespaces runs the suite with the helper required to be in namespaces of
// its own (Landlock + seccomp on top).
func TestConformanceNamespaces(t *testing.T) {
	requireNamespaces(t)
	backendtest.Run(t, newEnvMode(sandbox.ModeNamespaces))
}

// TestRefusesSystemWorkspace: a system directory, a home root or the host's root is no
// workspace — `--config /dev/null` once made /dev one. A symlink to one is refused as what it
// leads to; a project directory below a home is fine.
func TestRefusesSystemWorkspace(t *testing.T) {
	t.Setenv("HOME", "/nonexistent/home/ann")
	link := filepath.Join(t.TempDir(), "etc-link")
	if err := os.Symlink("/etc", link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ ws, want string }{
		{"/", "/ is the host's root"},
		{"/dev", "/dev is the host's devices"},
		{"/etc", "/etc is a system directory"},
		{"/usr", "/usr is a system directory"},
		{"/proc/self", "is a kernel filesystem"},
		{"/home", "contains /home/*"},
		{link, "/etc (resolved from " + link + ") is a system directory"},
	} {
		t.Run(tc.ws, func(t *testing.T) {
			env, err := local.New(local.Config{Workspace: tc.ws})
			if err == nil {
				_ = env.Close(context.Background())
				t.Fatalf("workspace %s accepted", tc.ws)
			}
			if !strings.Contains(err.Error(), "refused: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("workspace %s: %v, want %q", tc.ws, err, tc.want)
			}
		})
	}
	env, err := local.New(local.Config{Workspace: t.TempDir()})
	if err != nil {
		t.Fatalf("a project directory was refused: %v", err)
	}
	_ = env.Close(context.Background())
}

// TestConformanceSandboxed runs the same suite in the fallback: a helper without
// namespaces, with the kernel sandbox required.
func TestConformanceSandboxed(t *testing.T) {
	requireLandlock(t)
	backendtest.Run(t, newEnvMode(sandbox.ModeLandlock))
}

func requireLandlock(t *testing.T) {
	t.Helper()
	if abi := sandbox.KernelABI(); abi < sandbox.RequiredABI {
		if os.Getenv("AIRLOCK_REQUIRE_LANDLOCK") == "1" {
			t.Fatalf("Landlock ABI %d, need %d", abi, sandbox.RequiredABI)
		}
		t.Skipf("Landlock ABI %d, need %d", abi, sandbox.RequiredABI)
	}
}

func BenchmarkExec(b *testing.B) {
	for _, mode := range []sandbox.Mode{sandbox.ModeOff, sandbox.ModeLandlock, sandbox.ModeNamespaces} {
		b.Run("sandbox="+string(mode), func(b *testing.B) {
			if mode == sandbox.ModeLandlock && sandbox.KernelABI() < sandbox.RequiredABI {
				b.Skip("no Landlock")
			}
			env, err := local.New(local.Config{Workspace: b.TempDir(), Sandbox: local.SandboxConfig{Mode: mode}})
			if err != nil {
				b.Fatal(err)
			}
			defer env.Close(context.Background())
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := env.Exec(ctx, backend.Request{Argv: []string{"/bin/true"}})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("exec: %v %d", err, res.ExitCode)
				}
			}
		})
	}
}

// newEnv is the backend as configured by default (sandbox auto).
func newEnv(t *testing.T) backend.Environment { return newEnvMode(sandbox.ModeAuto)(t) }

// TestDescribeScratch checks that the session's private temp dir, which commands get as
// TMPDIR, is the only scratch the environment reports (issue 10).
func TestDescribeScratch(t *testing.T) {
	env, err := local.New(local.Config{Workspace: t.TempDir(), Sandbox: local.SandboxConfig{Mode: sandbox.ModeOff}})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close(context.Background())
	d := env.Describe()
	if d.TempDir == "" || d.TempDir != env.TempDir() || len(d.Scratch) != 1 || d.Scratch[0] != d.TempDir {
		t.Fatalf("scratch %v, TMPDIR %q, want only the session temp dir %q", d.Scratch, d.TempDir, env.TempDir())
	}
	if got := backendtest.MustSh(t, env, `printf %s "$TMPDIR"`); got != d.TempDir {
		t.Fatalf("commands' TMPDIR %q, Describe says %q", got, d.TempDir)
	}
}

// requireNamespaces skips where the host cannot give the helper namespaces (a container's
// seccomp profile, user namespaces forbidden), unless AIRLOCK_REQUIRE_NAMESPACES=1.
func requireNamespaces(t testing.TB) {
	t.Helper()
	env, err := local.New(local.Config{Workspace: t.TempDir(), Sandbox: local.SandboxConfig{Mode: sandbox.ModeNamespaces}})
	if err != nil {
		if os.Getenv("AIRLOCK_REQUIRE_NAMESPACES") == "1" {
			t.Fatalf("no namespaces here: %v", err)
		}
		t.Skipf("no namespaces here: %v", err)
	}
	_ = env.Close(context.Background())
}

// TestWorkspaceTopReplaced: a command in the workspace's top is checked against the
// directory New resolved. When a symlink to elsewhere takes the workspace's place, the
// command is refused as outside the workspace; a new directory at the same path is still
// the workspace, and commands run there.
func TestWorkspaceTopReplaced(t *testing.T) {
	parent := t.TempDir()
	ws := filepath.Join(parent, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	env, err := local.New(local.Config{Workspace: ws, Sandbox: local.SandboxConfig{Mode: sandbox.ModeOff}})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close(context.Background())
	ctx := context.Background()
	run := func() (backend.Result, error) { return env.Exec(ctx, backend.Request{Command: "pwd"}) }
	if res, err := run(); err != nil || strings.TrimSpace(string(res.Stdout)) != ws {
		t.Fatalf("before: %v %q", err, res.Stdout)
	}

	if err := os.Rename(ws, filepath.Join(parent, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), ws); err != nil {
		t.Fatal(err)
	}
	if res, err := run(); !errors.Is(err, backend.ErrOutsideWorkspace) {
		t.Fatalf("a symlink in the workspace's place: want %v, got %v %q", backend.ErrOutsideWorkspace, err, res.Stdout)
	}

	if err := os.Remove(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if res, err := run(); err != nil || strings.TrimSpace(string(res.Stdout)) != ws {
		t.Fatalf("a new directory in the workspace's place: %v %q", err, res.Stdout)
	}
}
