package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/airlock-dev/airlock/backend/docker/dockertest"
)

// TestDockerExampleFirstTry follows configs/examples/docker.toml as written, in a workspace
// that belongs to the person at the keyboard (not root, not nobody): a batch that writes,
// patches and reads a file succeeds on the first try, and what it wrote is that person's.
func TestDockerExampleFirstTry(t *testing.T) {
	cli := dockertest.Client(t)
	dockertest.Image(t) // the image the example names, built where missing
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the workspace another owner")
	}
	const uid, gid = 4321, 4321
	dir := t.TempDir()
	example, err := os.ReadFile("../configs/examples/docker.toml")
	if err != nil {
		t.Fatal(err)
	}
	writeConfig(t, dir, string(example))
	for _, p := range []string{dir, filepath.Join(dir, "airlock.toml")} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The example reuses its container; remove the one this workspace got.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", "dev.airlock.owner=airlock"))})
		if err != nil {
			return
		}
		for _, c := range list {
			for _, m := range c.Mounts {
				if m.Source == dir {
					_ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
				}
			}
		}
	})

	rs := call(t, dir, `[
		{"call_id": "w", "name": "write_file", "arguments": {"path": "notes/plan.md", "content": "# plan\n- read\n"}},
		{"call_id": "p", "name": "patch", "arguments": {"path": "notes/plan.md", "old_string": "- read", "new_string": "- read\n- patch"}},
		{"call_id": "r", "name": "read_file", "arguments": {"path": "notes/plan.md"}},
		{"call_id": "t", "name": "terminal", "arguments": {"command": "id -u; ls -ln notes"}}
	]`)
	for _, r := range rs {
		if r.Status != "ok" {
			b, _ := json.Marshal(r)
			t.Fatalf("call %s: %s", r.CallID, b)
		}
	}
	if rs[2].Content != "1|# plan\n2|- read\n3|- patch\n" {
		t.Errorf("read back %q", rs[2].Content)
	}
	for _, p := range []string{"notes", "notes/plan.md"} {
		fi, err := os.Stat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || st.Gid != gid {
			t.Errorf("%s is owned by %d:%d on the host, want the workspace owner %d:%d", p, st.Uid, st.Gid, uid, gid)
		}
	}
}
