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

// helperDirAttacks try to write, replace, remove or loosen what is under /.airlock, and to
// end the container's main process, which would take the helper with it.
var helperDirAttacks = []string{
	"for f in /.airlock/helper-*; do echo x > $f; done",
	"for f in /.airlock/helper-*; do cp /bin/busybox $f.new && mv -f $f.new $f; done",
	"for f in /.airlock/helper-*; do touch -d 2000-01-01 $f; chmod 777 $f; done",
	"rm -rf /.airlock/*",
	"mv /.airlock /tmp/moved",
	"chmod 777 /.airlock",
	"touch /.airlock/planted && ln -s /tmp /.airlock/link",
	"for d in /.airlock/*.d; do touch $d/planted; done",
	"kill -9 1; kill -9 -1; echo after kill -1",
}

// helperState is what a command can see of /.airlock: names, modes, owners, sizes, times
// and digests.
const helperState = "ls -laRn --full-time /.airlock && find /.airlock -type f -exec sha256sum {} +"

// TestHelperNotWritableNorKillable: commands through the backend try to write, replace or
// remove the helper and its directory, and to end the helper — kill -9 -1, a kill and a
// tgkill on each of its threads, pidfd_send_signal through pidfd_open and through a /proc
// directory, ptrace, /proc/PID/mem, process_vm_writev, prlimit. Afterwards the next call
// runs on the same helper (nothing was restarted) and /.airlock is unchanged.
func TestHelperNotWritableNorKillable(t *testing.T) {
	ws := dockertest.Workspace(t)
	copyProgram(t, helperAttack.Path(t), ws)
	cfg := testConfig(t, ws, docker.ModeHelper)
	cfg.ReuseContainer = false
	env := newEnv(t, cfg)
	if d := env.Describe(); d.Mode != docker.ModeHelper {
		t.Fatalf("mode %s: %v", d.Mode, d.Notes)
	}
	before := sh(t, env, helperState)

	var log strings.Builder
	for _, cmd := range append(helperDirAttacks, "./helperattack") {
		res := mustExec(t, env, backend.Request{Command: cmd, Dir: "/workspace"})
		log.WriteString("$ " + cmd + "\n" + string(res.Stdout) + string(res.Stderr))
		if len(res.Notes) > 0 {
			t.Errorf("after %q: %q (the helper or container was restarted)", cmd, res.Notes)
		}
	}
	out := log.String()
	if !strings.Contains(out, "helper pid") || !strings.Contains(out, "after kill -1") {
		t.Fatalf("the attacks did not run as planned:\n%s", out)
	}
	res := mustExec(t, env, backend.Request{Command: helperState})
	if len(res.Notes) > 0 {
		t.Errorf("next call: %q (the helper or container was restarted)\nattacks said:\n%s", res.Notes, out)
	}
	if after := strings.TrimSpace(string(res.Stdout)); after != before {
		t.Errorf("/.airlock changed:\nbefore:\n%s\nafter:\n%s\nattacks said:\n%s", before, after, out)
	}
	// File tools still answer, and what they write is the commands' user's, not root's.
	if _, err := env.FileOp(t.Context(), backend.FileRequest{Op: backend.FileWrite, Path: "/workspace/by-file-tool.txt", Root: "/workspace", MaxBytes: 10, Data: []byte("x")}); err != nil {
		t.Fatalf("file tool after the attacks: %v", err)
	}
	fi, err := os.Stat(filepath.Join(ws, "by-file-tool.txt"))
	must(t, err)
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 || st.Gid != 65534 {
		t.Errorf("a file the helper wrote belongs to %d:%d, not to the commands' user 65534:65534", st.Uid, st.Gid)
	}
}
