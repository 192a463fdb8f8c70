package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-dev/airlock/backend/helper/helpertest"
	"github.com/airlock-dev/airlock/internal/buildtest"
)

// nobody is the unprivileged user the test runs airlock as.
const nobody = 65534

// TestUnprivilegedUser: a person who is not root runs airlock as themselves, as on most
// developers' machines. CI runs as root, and until stop 34 nothing ran airlock otherwise:
// airlock makes itself not dumpable, which kept it from writing its helper's user namespace
// maps (EACCES), and the fallback's helper, holding no capability, could not empty its
// bounding set. So a user who was not root could run no command at all.
//
// Both builds a user gets run a command as that user, confined, in namespace mode (a user
// namespace, and the helper's others) and in the fallback mode (sandbox = "landlock"): the
// default build (cgo), which runs itself as the helper, and the static build with the
// airlock-helper beside it.
func TestUnprivilegedUser(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("AIRLOCK_REQUIRE_ROOT") == "1" {
			t.Fatal("AIRLOCK_REQUIRE_ROOT=1 but not root")
		}
		t.Skip("needs root, to run airlock as another user")
	}
	requireLandlockIT(t)
	builds := map[string][]string{
		"default build":                {helpertest.DefaultBuild(t)},
		"static build with its helper": {airlockBin, filepath.Join(filepath.Dir(airlockBin), "airlock-helper")},
	}
	for name, files := range builds {
		for _, mode := range []string{"namespaces", "landlock"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				dir := unprivilegedDir(t, files)
				ws := filepath.Join(dir, "home", "ws")
				cfg := filepath.Join(dir, "airlock.toml")
				toml := fmt.Sprintf("[environment]\nworkspace = %q\n\n[environment.local]\nsandbox = %q\n", ws, mode)
				if err := os.WriteFile(cfg, []byte(toml), 0o644); err != nil {
					t.Fatal(err)
				}
				out := runAs(t, dir, ws, "exec", "--config", cfg, "--", "sh", "-c",
					`id -u; printf marker > made.txt; grep -E '^(NoNewPrivs|CapEff)' /proc/self/status`)
				for _, want := range []string{fmt.Sprint(nobody), "NoNewPrivs:\t1", "CapEff:\t0000000000000000"} {
					if !strings.Contains(out, want) {
						t.Errorf("the command's output lacks %q:\n%s", want, out)
					}
				}
				var st syscall.Stat_t
				if err := syscall.Stat(filepath.Join(ws, "made.txt"), &st); err != nil || st.Uid != nobody {
					t.Errorf("made.txt: %v, owner %d, want %d", err, st.Uid, nobody)
				}
				if mode == "namespaces" {
					doctor := runAs(t, dir, ws, "doctor", "--config", cfg)
					if !strings.Contains(doctor, "helper-namespaces") || !strings.Contains(doctor, "in a user namespace") {
						t.Errorf("doctor does not report the helper in namespaces, a user namespace among them:\n%s", doctor)
					}
				}
			})
		}
	}
}

// unprivilegedDir makes a directory the unprivileged user can use: bin with copies of files
// (airlock, and its helper when there is one), and home with a workspace, ws, owned by it.
func unprivilegedDir(t *testing.T, files []string) string {
	t.Helper()
	dir := t.TempDir()
	// t.TempDir's directories are 0700, root's: the user must pass through them.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "bin")
	ws := filepath.Join(dir, "home", "ws")
	for _, d := range []string{bin, ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{filepath.Join(dir, "home"), ws} {
		if err := os.Chown(d, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	for i, f := range files {
		name := "airlock"
		if i > 0 {
			name = filepath.Base(f)
		}
		buildtest.CopyFile(t, f, filepath.Join(bin, name), 0o755)
	}
	return dir
}

// runAs runs dir/bin/airlock with args as the unprivileged user, in wd with HOME at
// dir/home, and returns its stdout; anything but exit code 0 fails the test.
func runAs(t *testing.T, dir, wd string, args ...string) string {
	t.Helper()
	home := filepath.Join(dir, "home")
	cmd := exec.Command(filepath.Join(dir, "bin", "airlock"), args...)
	cmd.Dir = wd
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "XDG_STATE_HOME=" + filepath.Join(home, "state")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("airlock %s as uid %d: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), nobody, err, out.String(), errb.String())
	}
	return out.String()
}
