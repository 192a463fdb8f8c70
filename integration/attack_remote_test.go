package integration

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend/ssh/sshtest"
)

// chownTo gives p to the named account, so that without enforcement the remote user could
// change it: what keeps it intact is then the sandbox, not file permissions.
func chownTo(t *testing.T, name string, paths ...string) {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for _, p := range paths {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
}

// newSSHBed points airlock at a fresh sshd (on this machine, as an account of its own) with
// the resident helper and the sandbox required. The victims outside the remote workspace
// belong to the remote account.
func newSSHBed(t *testing.T, mode, sandboxMode string) (*attackBed, string) {
	t.Helper()
	srv := sshtest.Start(t)
	c := srv.Config
	b := &attackBed{t: t, dir: t.TempDir(), ws: c.Workdir}
	b.marker = fmt.Sprintf("m4rker-%d-%d", os.Getpid(), time.Now().UnixNano())
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	b.outside, b.outHost = filepath.Join(base, "outside"), filepath.Join(base, "outside")
	mustMkdir(t, b.outside)
	mustWrite(t, filepath.Join(b.outside, "victim"), victimContent)
	tmp, err := os.MkdirTemp("", "airlock-attack-other-project-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	b.tmpDir, b.tmpHost = tmp, tmp
	mustWrite(t, filepath.Join(tmp, "keep"), victimContent)
	chownTo(t, c.User, b.outside, filepath.Join(b.outside, "victim"), tmp, filepath.Join(tmp, "keep"))
	u, err := user.Lookup(c.User)
	if err != nil {
		t.Fatal(err)
	}
	b.home = u.HomeDir
	secret := filepath.Join(u.HomeDir, ".ssh", "id_marker")
	mustMkdir(t, filepath.Dir(secret))
	mustWrite(t, secret, b.marker+"-ssh\n")
	chownTo(t, c.User, filepath.Dir(secret), secret)
	writeConfig(t, b.dir, fmt.Sprintf(`[environment]
type = "ssh"
timeout = 20
[environment.ssh]
host = %q
port = %d
user = %q
key_path = %q
known_hosts = %q
workdir = %q
helper_binary = %q
mode = %q
sandbox = %q
[approvals]
mode = "auto"
`, c.Host, c.Port, c.User, c.KeyPath, c.KnownHosts, c.Workdir, airlockBin, mode, sandboxMode))
	return b, c.User
}

func TestAttackSSHAgentSandbox(t *testing.T) {
	t.Parallel()
	requireLandlockIT(t)
	b, _ := newSSHBed(t, "auto", "landlock")
	rs := b.calls(append([]string{"mkdir -p " + b.ws + "/work && echo mine > " + b.ws + "/work/mine.txt && echo m > " + b.ws + "/mvme"}, b.writeAttacks()...)...)
	if rs[0].Status != "ok" || *rs[0].Metadata.ExitCode != 0 {
		t.Fatalf("setup in the remote workspace: %+v", rs[0])
	}
	b.checkOutside()
	rs = b.calls(
		"cat "+b.home+"/.ssh/id_marker",
		"cat /proc/$PPID/environ; ps eww -p $PPID",
		fmt.Sprintf("kill -0 %d", os.Getpid()),
		"kill -KILL $PPID",
		"echo still-alive",
	)
	if rs[3].Metadata.ExitCode == nil || *rs[3].Metadata.ExitCode == 0 {
		t.Errorf("the command could signal its helper: %+v", rs[3])
	}
	if !strings.Contains(rs[4].Content, "still-alive") {
		t.Errorf("the helper did not survive: %+v", rs[4])
	}
	b.checkOutside()
	ok := b.calls("echo fine > " + b.ws + "/work/r && cp " + b.ws + "/work/r " + b.ws + "/work/c && ln -s c " + b.ws + "/work/l2 && cat " + b.ws + "/work/l2 && echo t > $TMPDIR/t")
	if ok[0].Status != "ok" || *ok[0].Metadata.ExitCode != 0 || ok[0].Content != "fine\n" {
		t.Errorf("inside the remote roots: %+v", ok[0])
	}
}

// TestAttackSSHSessionMode: session mode has no helper to hold a sandbox, so a required one
// is refused with the reason and the way out; auto runs and says nothing is enforced.
func TestAttackSSHSessionMode(t *testing.T) {
	t.Parallel()
	b, _ := newSSHBed(t, "session", "landlock")
	out, errOut, code := run(t, b.dir, `{"name":"terminal","arguments":{"command":"true"}}`, nil, "call")
	if !strings.Contains(out+errOut, `sandbox = \"landlock\" cannot be delivered`) && !strings.Contains(out+errOut, `sandbox = "landlock" cannot be delivered`) {
		t.Fatalf("session mode with landlock required: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, s := range []string{"session mode", `sandbox = \"auto\"`} {
		if !strings.Contains(out+errOut, s) && !strings.Contains(out+errOut, strings.ReplaceAll(s, `\"`, `"`)) {
			t.Errorf("refusal does not say %q: %s %s", s, out, errOut)
		}
	}
	b2, _ := newSSHBed(t, "session", "auto")
	rs := b2.calls("echo hi")
	if rs[0].Status != "ok" {
		t.Fatalf("session mode, auto: %+v", rs[0])
	}
	out, _, _ = run(t, b2.dir, "", nil, "doctor")
	if !strings.Contains(out, "not enforced") {
		t.Errorf("doctor does not say the sandbox is not enforced:\n%s", out)
	}
}

// TestAttackDocker: the container is the boundary — the host directory outside the mounted
// workspace is not there to write, a read-only mount stays read-only, the host's loopback
// and processes are out of reach.
func TestAttackDocker(t *testing.T) {
	t.Parallel()
	ro := t.TempDir()
	mustWrite(t, filepath.Join(ro, "victim"), victimContent)
	if err := os.Chmod(ro, 0o777); err != nil {
		t.Fatal(err)
	}
	dir, _, _ := dockerSetup(t, fmt.Sprintf("volumes = [{host = %q, container = \"/ro\", read_only = true}]", ro))
	b := &attackBed{t: t, dir: dir, ws: "/workspace", outside: "/ro", outHost: ro}
	tmp, err := os.MkdirTemp("", "airlock-attack-other-project-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	mustWrite(t, filepath.Join(tmp, "keep"), victimContent)
	b.tmpDir, b.tmpHost = tmp, tmp
	b.marker = fmt.Sprintf("m4rker-%d-%d", os.Getpid(), time.Now().UnixNano())
	b.env = []string{"AIRLOCK_TEST_SECRET_MARKER=" + b.marker}
	attacks := []string{"mkdir -p /workspace/work && echo mine > /workspace/work/mine.txt && echo m > /workspace/mvme"}
	for _, a := range b.writeAttacks() {
		// busybox has no python3: the same writes with what the image has.
		a = strings.ReplaceAll(a, "python3 -c 'import os; os.rename(\"/workspace/work/mine.txt\", \"/ro/renamed\")'", "mv -f /workspace/work/mine.txt /ro/renamed")
		a = strings.ReplaceAll(a, "python3 -c 'open(\"/ro/py\", \"w\").write(\"pwned\")'", "dd if=/dev/zero of=/ro/py count=1")
		attacks = append(attacks, a)
	}
	b.calls(attacks...)
	b.checkOutside()
	rs := b.calls(
		"cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c m4rker; true",
		fmt.Sprintf("kill -0 %d", os.Getpid()),
		"nc -w 2 127.0.0.1 22 </dev/null; wget -q -T 2 -O- http://127.0.0.1:1/ ; true",
	)
	if rs[1].Metadata.ExitCode == nil || *rs[1].Metadata.ExitCode == 0 {
		t.Errorf("a container command reached the test process: %+v", rs[1])
	}
	b.checkOutside()
}
