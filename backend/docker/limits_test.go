package docker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
)

// TestLimitsAgainstDaemon: /tmp is a tmpfs of the configured size, the container has a
// cgroup namespace of its own, the helper's last-use mark and what it writes are not
// writable by others, and the free-space guard refuses a file-tool write.
func TestLimitsAgainstDaemon(t *testing.T) {
	cli := dockertest.Client(t)
	ws := dockertest.Workspace(t)
	cfg := testConfig(t, ws, docker.ModeHelper)
	cfg.ReuseContainer = false
	cfg.TmpSize = 8 << 20
	env := newEnv(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	info, err := cli.ContainerInspect(ctx, env.ContainerID())
	if err != nil {
		t.Fatal(err)
	}
	if opts := info.HostConfig.Tmpfs["/tmp"]; !strings.Contains(opts, "size=8388608") {
		t.Errorf("/tmp tmpfs options %q", opts)
	}
	if info.HostConfig.CgroupnsMode != "private" {
		t.Errorf("cgroupns mode %q", info.HostConfig.CgroupnsMode)
	}
	// /tmp holds no more than its size.
	res := mustExec(t, env, backend.Request{Command: "dd if=/dev/zero of=/tmp/fill bs=1048576 count=16 2>&1; ls -l /tmp/fill"})
	if !strings.Contains(string(res.Stdout), "No space left") {
		t.Errorf("16 MiB into an 8 MiB /tmp: %s", res.Stdout)
	}
	sh(t, env, "rm -f /tmp/fill")
	// Every cgroup the container sees is the root of its own namespace.
	for _, line := range strings.Split(sh(t, env, "cat /proc/self/cgroup"), "\n") {
		if !strings.HasSuffix(line, ":/") {
			t.Errorf("cgroup line %q: the host's cgroup path is visible", line)
		}
	}
	uid, gid := sh(t, env, "id -u"), sh(t, env, "id -g")
	if f := strings.Fields(sh(t, env, "ls -ln /.airlock-last-use")); len(f) < 4 || f[0] != "-rw-r--r--" || f[2] != uid || f[3] != gid {
		t.Errorf("last-use mark: %q", f)
	}
	// The helper's writes: a new file and the directory made for it are not world-writable.
	if _, err := env.FileOp(ctx, backend.FileRequest{Op: backend.FileWrite, Path: "/workspace/made/new.txt", Root: "/workspace", MaxBytes: 10, Data: []byte("x")}); err != nil {
		t.Fatalf("helper write: %v", err)
	}
	for _, p := range []string{"/workspace/made", "/workspace/made/new.txt"} {
		if mode := sh(t, env, "ls -ldn "+p); len(mode) < 10 || mode[8] == 'w' {
			t.Errorf("%s: %q is writable by others", p, mode)
		}
	}
	t.Run("free space guard", func(t *testing.T) {
		cfg := cfg
		cfg.WorkspaceMinFree = 1 << 60
		env := newEnv(t, cfg)
		_, err := env.FileOp(ctx, backend.FileRequest{Op: backend.FileWrite, Path: "/workspace/guarded.txt", Root: "/workspace", MaxBytes: 10, Data: []byte("x")})
		var fe *backend.FileError
		if !errors.As(err, &fe) || fe.Code != backend.FileTooLarge || !strings.Contains(fe.Msg, "workspace_min_free") {
			t.Fatalf("write past the guard: %v", err)
		}
		if res := mustExec(t, env, backend.Request{Command: "test -e /workspace/guarded.txt"}); res.ExitCode == 0 {
			t.Error("the refused write left a file")
		}
	})
}
