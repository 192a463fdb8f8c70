package fileops

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/pathpolicy"
)

// pathFirst puts a directory first on PATH for every command.
type pathFirst struct {
	backend.Environment
	dir string
}

func (p pathFirst) Exec(ctx context.Context, req backend.Request) (backend.Result, error) {
	env := map[string]string{"PATH": p.dir + ":" + os.Getenv("PATH")}
	for k, v := range req.Env {
		env[k] = v
	}
	req.Env = env
	return p.Environment.Exec(ctx, req)
}

// TestShellWriteTargetChangesBeforeRename makes the write's target a directory, or a link to
// a directory outside, at the last moment: in an mv that does so and then runs the real one.
// The temporary file must not be left inside that directory, whichever mv the environment
// has (GNU, busybox, or one without -T).
func TestShellWriteTargetChangesBeforeRename(t *testing.T) {
	t.Parallel()
	gnu, err := exec.LookPath("mv")
	if err != nil {
		t.Skip("no mv")
	}
	mvs := map[string]string{
		"gnu":  `exec ` + gnu + ` "$@"`,
		"no T": `case $1 in -*T*) echo "mv: invalid option -- 'T'" >&2; exit 1 ;; esac; exec ` + gnu + ` "$@"`,
	}
	if bb, err := exec.LookPath("busybox"); err == nil {
		mvs["busybox"] = `exec ` + bb + ` mv "$@"`
	}
	changes := map[string]string{
		"directory":             `mkdir "$last"`,
		"link to a dir outside": `ln -s ../outside "$last"`,
	}
	for mvName, realMV := range mvs {
		for changeName, change := range changes {
			t.Run(mvName+"/"+changeName, func(t *testing.T) {
				t.Parallel()
				base := t.TempDir()
				for _, d := range []string{"ws", "outside", "bin"} {
					if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
						t.Fatal(err)
					}
				}
				shim := "#!/bin/sh\nfor last; do :; done\ncase $last in ./target.txt) " + change + " ;; esac\n" + realMV + "\n"
				if err := os.WriteFile(filepath.Join(base, "bin/mv"), []byte(shim), 0o755); err != nil {
					t.Fatal(err)
				}
				env, err := local.New(local.Config{Workspace: filepath.Join(base, "ws")})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = env.Close(context.Background()) })
				s := shellFiles{env: pathFirst{Environment: env, dir: filepath.Join(base, "bin")}}
				ws := env.Workspace()
				_, err = s.write(context.Background(), ws+"/target.txt", []byte("payload\n"), "")
				var fe *fsError
				if err != nil && !errors.As(err, &fe) {
					t.Fatalf("write: %v", err)
				}
				if err != nil && fe.code != pathpolicy.CodeSymlinkEscape && fe.code != CodeNotRegular {
					t.Errorf("write failed with %v, want symlink_escape or not_a_regular_file", err)
				}
				if err == nil {
					// Only a rename over the link itself may succeed.
					if data, rerr := os.ReadFile(filepath.Join(ws, "target.txt")); rerr != nil || string(data) != "payload\n" {
						t.Errorf("write reported success, target.txt = %q, %v", data, rerr)
					}
				}
				// Neither outside nor a directory now at target.txt may hold the temporary file.
				for _, d := range []string{"outside", "ws/target.txt"} {
					if entries, _ := os.ReadDir(filepath.Join(base, d)); len(entries) > 0 {
						t.Errorf("%s holds %s after the write", d, entries[0].Name())
					}
				}
				if left, _ := filepath.Glob(filepath.Join(ws, ".airlock-*")); len(left) > 0 {
					t.Errorf("temporary files left: %v", left)
				}
			})
		}
	}
}
