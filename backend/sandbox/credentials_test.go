//go:build linux

package sandbox_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/backend/sandbox"
)

// TestCredentialStoreMadeLater: a credential store that appears beneath a toolchain
// directory commands may read (a `cargo login` after the session started) is kept out from
// the next command on, while the toolchain's other files stay readable.
func TestCredentialStoreMadeLater(t *testing.T) {
	sandbox.RequireLandlock(t)
	base := t.TempDir()
	home, ws := filepath.Join(base, "home"), filepath.Join(base, "ws")
	for _, d := range []string{filepath.Join(home, ".cargo"), filepath.Join(home, ".cache"), ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, ".cargo", "config.toml"), []byte("[build]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(sandbox.ModeLandlock, sandbox.Policy{ReadRoots: []string{ws}, WriteRoots: []string{ws}, Home: home})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	cat := func(p string) (string, error) {
		var out bytes.Buffer
		err := sb.Do(func() error {
			cmd := exec.Command("/bin/cat", p)
			cmd.Stdout, cmd.Stderr = &out, &out
			return cmd.Run()
		})
		return out.String(), err
	}
	if out, err := cat(filepath.Join(home, ".cargo", "config.toml")); err != nil {
		t.Fatalf("toolchain config not readable: %v %s", err, out)
	}
	for _, p := range []string{".cargo/credentials.toml", ".cache/huggingface/token"} {
		f := filepath.Join(home, p)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("secret-marker\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := cat(f); err == nil || strings.Contains(out, "secret-marker") {
			t.Errorf("%s made after the sandbox was built is readable: %q", p, out)
		}
	}
	if out, err := cat(filepath.Join(home, ".cargo", "config.toml")); err != nil {
		t.Errorf("toolchain config not readable after the new plan: %v %s", err, out)
	}
}
