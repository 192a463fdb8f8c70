package local_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/backend/sandbox"
)

// TestDenyNamesMaskedInReadRoots: a deny_names match in a read root that is not a write
// root (write_roots names one folder of the workspace) is masked like one in a write root,
// and the environment says it hides deny_names only when that holds.
func TestDenyNamesMaskedInReadRoots(t *testing.T) {
	for _, mode := range []sandbox.Mode{sandbox.ModeAuto, sandbox.ModeLandlock} {
		t.Run(string(mode), func(t *testing.T) {
			ws := t.TempDir()
			work := filepath.Join(ws, "work")
			if err := os.MkdirAll(work, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("API_KEY=marker-read-root-secret\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			env, err := local.New(local.Config{Workspace: ws, DefaultTimeout: time.Minute, Sandbox: local.SandboxConfig{
				Mode:       mode,
				ReadRoots:  []string{ws},
				WriteRoots: []string{work},
				Hidden:     func(rel string) bool { return rel == ".env" },
			}})
			if err != nil {
				t.Fatalf("local.New: %v", err)
			}
			t.Cleanup(func() { _ = env.Close(context.Background()) })
			res := sh(t, env, "cat .env", nil)
			if strings.Contains(string(res.Stdout), "marker-read-root-secret") {
				t.Fatalf("a deny_names match in a read root was readable (isolation %s): %q", env.Isolation(), res.Stdout)
			}
			if !env.Describe().Capabilities.HidesDenyNames {
				t.Errorf("deny_names are hidden but the environment does not say so (isolation %s)", env.Isolation())
			}
		})
	}
}
