package pathpolicy

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/backend/sandbox"
)

// shellOnly hides the helper's native resolver, so resolve takes the shell script.
type shellOnly struct{ backend.Environment }

// TestNativeResolveMatchesTheScript: the helper's native resolver and the shell script give
// the same answer for every kind of path: plain, missing, through relative and absolute
// links, dangling links, loops, ".." after a link, below a missing directory and after a
// file.
func TestNativeResolveMatchesTheScript(t *testing.T) {
	ws := t.TempDir()
	mk := func(f func() error) {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	mk(func() error { return os.MkdirAll(filepath.Join(ws, "a/b"), 0o755) })
	mk(func() error { return os.WriteFile(filepath.Join(ws, "a/f.txt"), []byte("12345"), 0o644) })
	mk(func() error { return os.Link(filepath.Join(ws, "a/f.txt"), filepath.Join(ws, "hard.txt")) })
	mk(func() error { return os.Symlink("a/b", filepath.Join(ws, "rel")) })
	mk(func() error { return os.Symlink(filepath.Join(ws, "a"), filepath.Join(ws, "abs")) })
	mk(func() error { return os.Symlink("nowhere/x", filepath.Join(ws, "dangling")) })
	mk(func() error { return os.Symlink("loop2", filepath.Join(ws, "loop1")) })
	mk(func() error { return os.Symlink("loop1", filepath.Join(ws, "loop2")) })
	mk(func() error { return os.Symlink("../..", filepath.Join(ws, "a/b/up")) })
	mk(func() error { return os.Symlink("/dev/null", filepath.Join(ws, "dev")) })
	paths := []string{ws, "/", ws + "/a/f.txt", ws + "/hard.txt", ws + "/missing/deeper", ws + "/rel", ws + "/rel/../f.txt",
		ws + "/abs/f.txt", ws + "/dangling", ws + "/dangling/more", ws + "/loop1/x", ws + "/rel/up/a", ws + "/missing/../x",
		ws + "/a/f.txt/../b", ws + "/dev", ws + "/a/b/up/abs/b"}
	for _, mode := range []sandbox.Mode{sandbox.ModeOff, sandbox.ModeAuto} {
		t.Run(string(mode), func(t *testing.T) {
			env, err := local.New(local.Config{Workspace: ws, Sandbox: local.SandboxConfig{Mode: mode}})
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close(context.Background())
			native, err := resolve(context.Background(), env, paths)
			if err != nil {
				t.Fatal(err)
			}
			script, err := resolve(context.Background(), shellOnly{env}, paths)
			if err != nil {
				t.Fatal(err)
			}
			for i := range paths {
				if !reflect.DeepEqual(native[i], script[i]) {
					t.Errorf("%s:\nnative %+v\nscript %+v", paths[i], native[i], script[i])
				}
			}
		})
	}
}
