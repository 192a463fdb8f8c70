package docker_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
)

// TestUserIsWorkspaceOwner: with user "auto" (the default), commands run as the owner of
// the mounted workspace and what they write there is that owner's on the host; a workspace
// root owns leaves them nobody, and Describe says why.
func TestUserIsWorkspaceOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the workspace another owner")
	}
	const uid, gid = 4321, 4322
	ws := t.TempDir()
	if err := os.Chmod(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ws, uid, gid); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{docker.ModeHelper, docker.ModeExec} {
		t.Run(mode, func(t *testing.T) {
			cfg := testConfig(t, ws, mode)
			if cfg.User != docker.UserAuto {
				t.Fatalf("default user %q, want %q", cfg.User, docker.UserAuto)
			}
			env := newEnv(t, cfg)
			if got := sh(t, env, "id -u; id -g"); got != "4321\n4322" {
				t.Errorf("id inside: %q, want the workspace owner 4321/4322", got)
			}
			res := mustExec(t, env, backend.Request{Command: "echo hi > from-" + mode + ".txt && mkdir -p d-" + mode})
			if res.ExitCode != 0 {
				t.Fatalf("write in the workspace: exit %d %q", res.ExitCode, res.Stderr)
			}
			fi, err := os.Stat(filepath.Join(ws, "from-"+mode+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || st.Gid != gid {
				t.Errorf("file written is owned by %d:%d on the host, want %d:%d", st.Uid, st.Gid, uid, gid)
			}
			if !describes(env.Describe().Notes, "the owner of the workspace") {
				t.Errorf("Describe does not say whom commands run as: %q", env.Describe().Notes)
			}
		})
	}
	t.Run("root-owned workspace", func(t *testing.T) {
		cfg := testConfig(t, dockertest.Workspace(t), docker.ModeExec)
		env := newEnv(t, cfg)
		if got := sh(t, env, "id -u"); got != "65534" {
			t.Errorf("id -u = %q, want 65534", got)
		}
		if !describes(env.Describe().Notes, "is owned by root") {
			t.Errorf("Describe does not say why commands run as nobody: %q", env.Describe().Notes)
		}
	})
}

func describes(notes []string, sub string) bool {
	for _, n := range notes {
		if strings.Contains(n, sub) {
			return true
		}
	}
	return false
}
