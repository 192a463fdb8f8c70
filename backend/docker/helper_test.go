package docker_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
	"github.com/airlock-dev/airlock/backend/helper/helpertest"
	"github.com/airlock-dev/airlock/configs"
)

// findHelper sets $p to the PID of the helper; a command runs as the helper's user, so it
// can find it.
const findHelper = `p=; for d in /proc/[0-9]*; do case "$(tr '\0' ' ' < $d/cmdline 2>/dev/null)" in /.airlock/helper-*) p=${d#/proc/};; esac; done`

// dockerExec runs a shell command in the container from outside, as user (the container's
// user if ""): as root, it does what something with root in the container (the image, or an
// earlier session configured to run as root) could.
func dockerExec(t *testing.T, id, user, script string) string {
	t.Helper()
	args := []string{"exec"}
	if user != "" {
		args = append(args, "-u", user)
	}
	out, err := exec.Command("docker", append(args, id, "sh", "-c", script)...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker exec %q: %v\n%s", script, err, out)
	}
	return strings.TrimSpace(string(out))
}

func fileSHA256(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// The helper lives in /.airlock, which only root can write, with a writable root filesystem
// and with a read-only one (where it is a tmpfs of its own, never a directory under the
// world-writable /tmp). Commands cannot replace it; and what was changed in the container by
// root is not trusted: the next start checks the directory and the helper's digest and puts
// the real helper back.
func TestHelperCannotBeReplaced(t *testing.T) {
	const wrap = `for f in helper-*; do mv "$f" "$f.real" && printf '#!/bin/sh\necho hijacked > /tmp/pwned\nexec "$0.real" "$@"\n' > "$f" && chmod 755 "$f"; done`
	// Each puts a wrapper in the helper's place, as root or, once root opened the directory,
	// as the command user.
	tampers := []struct {
		name string
		do   func(t *testing.T, id string)
	}{
		{"file_replaced_by_root", func(t *testing.T, id string) { dockerExec(t, id, "0:0", "cd /.airlock && "+wrap) }},
		{"directory_opened_by_root", func(t *testing.T, id string) {
			dockerExec(t, id, "0:0", "chmod 777 /.airlock")
			dockerExec(t, id, "", "cd /.airlock && "+wrap)
		}},
	}
	for _, readOnly := range []bool{false, true} {
		for _, tamper := range tampers {
			name := "writable_rootfs/" + tamper.name
			if readOnly {
				name = "read_only_rootfs/" + tamper.name
			}
			t.Run(name, func(t *testing.T) { testHelperCannotBeReplaced(t, readOnly, tamper.do) })
		}
	}
}

func testHelperCannotBeReplaced(t *testing.T, readOnly bool, tamper func(t *testing.T, id string)) {
	cfg := testConfig(t, dockertest.Workspace(t), docker.ModeHelper)
	cfg.ReuseContainer = false
	cfg.ReadOnlyRootfs = readOnly
	env := newEnv(t, cfg)
	if d := env.Describe(); d.Mode != docker.ModeHelper {
		t.Fatalf("mode %q, notes %q", d.Mode, d.Notes)
	}
	want := fileSHA256(t, cfg.HelperBinary)
	helperFile := sh(t, env, findHelper+`; tr '\0' '\n' < /proc/$p/cmdline | head -1`)
	if !strings.HasPrefix(helperFile, "/.airlock/helper-") {
		t.Fatalf("helper runs from %q, want /.airlock/helper-*", helperFile)
	}
	if got := sh(t, env, "ls -ldn /.airlock | cut -c1-10; ls -ldn /.airlock | awk '{print $3}'"); got != "drwxr-xr-x\n0" {
		t.Errorf("/.airlock: %q, want drwxr-xr-x owned by 0", got)
	}

	// As the command user: nothing in /.airlock can be written, replaced or moved.
	res := mustExec(t, env, backend.Request{Command: `cd /.airlock || exit 9
for f in helper-*; do mv "$f" "$f.real" && exit 1; printf '#!/bin/sh\necho hijacked\n' > "$f" && exit 2; done
touch /.airlock/x && exit 3
mv /.airlock /.airlock.old 2>/dev/null && exit 4
mkdir -p /tmp/.airlock && chmod 777 /tmp/.airlock
exit 0`})
	if res.ExitCode != 0 {
		t.Errorf("the command user changed /.airlock (step %d): %s", res.ExitCode, res.Stderr)
	}

	// From outside: put a wrapper in the helper's place, then stop the helper so that
	// the next call starts it again.
	id := env.ContainerID()
	tamper(t, id)
	dockerExec(t, id, "", findHelper+`; kill -KILL $p`)
	time.Sleep(300 * time.Millisecond)

	res = mustExec(t, env, backend.Request{Command: "cat /tmp/pwned 2>/dev/null; echo ok"})
	if strings.Contains(string(res.Stdout), "hijacked") || string(res.Stdout) != "ok\n" {
		t.Errorf("after the helper was replaced: stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	if !hasNote(res, "restarted the resident helper") || env.Describe().Mode != docker.ModeHelper {
		t.Errorf("notes %q, mode %q", res.Notes, env.Describe().Mode)
	}
	if got := sh(t, env, "ls -ldn /.airlock | cut -c1-10"); got != "drwxr-xr-x" {
		t.Errorf("/.airlock after the restart: %q", got)
	}
	if got := sh(t, env, findHelper+`; sha256sum "$(tr '\0' '\n' < /proc/$p/cmdline | head -1)" | cut -d' ' -f1`); got != want {
		t.Errorf("the helper's file has SHA-256 %s, want the binary's %s", got, want)
	}
}

// A reused container prepared with the helper off is never reused by a session that runs
// the helper (the reviewer's path to a helper directory the command user owned), nor by one
// with another helper binary: the helper is part of the fingerprint.
func TestHelperPartOfFingerprint(t *testing.T) {
	ws := dockertest.Workspace(t)
	off := testConfig(t, ws, docker.ModeExec)
	off.ReadOnlyRootfs = true
	envOff := newEnv(t, off)
	res := mustExec(t, envOff, backend.Request{Command: "mkdir -m 777 /.airlock 2>/dev/null && exit 1; mkdir -m 777 /tmp/.airlock; exit 0"})
	if res.ExitCode != 0 {
		t.Errorf("a command made /.airlock in a read-only root filesystem")
	}

	on := off
	on.Helper = docker.HelperAuto
	on.HelperBinary = dockertest.HelperBinary(t)
	envOn := newEnv(t, on)
	if envOn.ContainerID() == envOff.ContainerID() {
		t.Fatalf("the helper-off container %s was reused with the helper on", envOff.ContainerID())
	}
	if d := envOn.Describe(); d.Mode != docker.ModeHelper {
		t.Errorf("mode %q, notes %q", d.Mode, d.Notes)
	}
	if got := sh(t, envOn, "ls -ldn /.airlock | cut -c1-10; ls -d /tmp/.airlock 2>/dev/null; true"); got != "drwxr-xr-x" {
		t.Errorf("helper directory: %q", got)
	}

	// Another binary (a copy with a byte appended still runs) gets another container.
	other := t.TempDir() + "/airlock"
	b, err := os.ReadFile(on.HelperBinary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, append(b, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	on2 := on
	on2.HelperBinary = other
	envOn2 := newEnv(t, on2)
	if envOn2.ContainerID() == envOn.ContainerID() {
		t.Errorf("a different helper binary reused the container")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, e := range []*docker.Env{envOff, envOn, envOn2} {
		_ = e.Close(ctx)
	}
}

// TestHelperFromDefaultBuild runs the helper from airlock as `go build ./cmd/airlock` makes
// it with a C compiler present — dynamically linked — in an image that has no C library at
// all: the helper comes with its loader and libraries, and commands do not inherit them.
func TestHelperFromDefaultBuild(t *testing.T) {
	dockertest.Client(t)
	for _, readOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "writable_rootfs", true: "read_only_rootfs"}[readOnly], func(t *testing.T) {
			cfg := testConfig(t, dockertest.Workspace(t), docker.ModeHelper)
			cfg.HelperBinary = helpertest.DefaultBuild(t)
			cfg.ReadOnlyRootfs = readOnly
			cfg.ReuseContainer = false
			env := newEnv(t, cfg)
			d := env.Describe()
			if d.Mode != docker.ModeHelper || !d.Capabilities.ResidentHelper {
				t.Fatalf("mode %q, notes %q", d.Mode, d.Notes)
			}
			if !strings.Contains(strings.Join(d.Notes, "\n"), "dynamically linked") {
				t.Errorf("notes do not say how the helper runs: %q", d.Notes)
			}
			if out := sh(t, env, "ls /lib/libc.so.6 /lib64 2>&1; env | grep -c '^LD_' ; true"); !strings.Contains(out, "No such file") || !strings.HasSuffix(out, "0") {
				t.Errorf("the image has a C library, or a command inherited the loader's settings: %q", out)
			}
			if got := sh(t, env, "echo ok"); got != "ok" {
				t.Errorf("echo: %q", got)
			}
		})
	}
}

// TestHelperFileOpsOnlyUsersAccess: the helper keeps root as its real user (so commands
// cannot signal it) but its file tools have the commands' user's access and no more: a file
// and a directory only root may use, made by root in the container, are refused to the file
// tools as to a command, and the refusal names the commands' user.
func TestHelperFileOpsOnlyUsersAccess(t *testing.T) {
	cfg := testConfig(t, dockertest.Workspace(t), docker.ModeHelper)
	cfg.ReuseContainer = false
	env := newEnv(t, cfg)
	if d := env.Describe(); d.Mode != docker.ModeHelper {
		t.Fatalf("mode %s: %v", d.Mode, d.Notes)
	}
	dockerExec(t, env.ContainerID(), "0:0", "cd /workspace && echo secret > rootonly && chmod 600 rootonly && mkdir rootdir && chmod 755 rootdir && echo x > rootdir/f")
	if res := mustExec(t, env, backend.Request{Command: "cat /workspace/rootonly; touch /workspace/rootdir/g"}); res.ExitCode == 0 || strings.Contains(string(res.Stdout), "secret") {
		t.Fatalf("a command used root's files: %+v", res)
	}
	for _, req := range []backend.FileRequest{
		{Op: backend.FileRead, Path: "/workspace/rootonly", MaxBytes: 100},
		{Op: backend.FileWindow, Path: "/workspace/rootonly", MaxBytes: 100},
		{Op: backend.FileWrite, Path: "/workspace/rootonly", MaxBytes: 100, Data: []byte("mine")},
		{Op: backend.FileWrite, Path: "/workspace/rootdir/new", MaxBytes: 100, Data: []byte("mine")},
		{Op: backend.FileWrite, Path: "/workspace/rootdir/f", MaxBytes: 100, Data: []byte("mine")},
	} {
		req.Root = "/workspace"
		res, err := env.FileOp(t.Context(), req)
		var fe *backend.FileError
		if !errors.As(err, &fe) || fe.Code != backend.FilePermission || !strings.Contains(fe.Msg, "uid 65534") {
			t.Errorf("%s %s: %q, %v; want a permission refusal naming uid 65534", req.Op, req.Path, res.Data, err)
		}
	}
	if got := dockerExec(t, env.ContainerID(), "0:0", "cat /workspace/rootonly; ls /workspace/rootdir"); got != "secret\nf" {
		t.Errorf("root's files changed: %q", got)
	}
	// What the user may, the tools do.
	if _, err := env.FileOp(t.Context(), backend.FileRequest{Op: backend.FileWrite, Path: "/workspace/mine", Root: "/workspace", MaxBytes: 10, Data: []byte("x")}); err != nil {
		t.Errorf("write in the workspace: %v", err)
	}
}

// TestOldHelperKeyIsNoted: a file's agent = "off", helper's former name, is still obeyed,
// and Describe (what doctor shows) says the name is deprecated. That a file giving both
// names is refused, with both named, is the config's to say (configs'
// TestHelperKeysAndTheirOldNames): no container is made for it.
func TestOldHelperKeyIsNoted(t *testing.T) {
	cfg := testConfig(t, sharedWorkspace(t), docker.ModeExec)
	file, err := configs.Parse([]byte("[environment]\ntype = \"docker\"\n[environment.docker]\nagent = \"off\"\n"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The test's container, with what the file says of the helper and the notes on it.
	read := file.Environment.Section("docker").(*docker.Config)
	cfg.Helper, cfg.OldKeys = read.Helper, read.OldKeys
	env := newEnv(t, cfg)
	d := env.Describe()
	if d.Mode != docker.ModeExec || !strings.Contains(strings.Join(d.Notes, "\n"), "environment.docker.agent is deprecated: call it helper") {
		t.Errorf("mode %q, notes %q: want exec mode, and a note on the old name", d.Mode, d.Notes)
	}
}
