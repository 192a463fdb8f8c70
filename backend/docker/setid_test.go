package docker_test

import (
	"archive/tar"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
	"github.com/airlock-dev/airlock/internal/buildtest"
)

// setidSpellings are the shell's ways to leave a setuid or setgid file or a device node in
// the workspace: each must fail, or leave a file without the bits. $SRC is a setuid file on
// a read-only volume (made on the host), setid.tar an archive with setuid, setgid and
// device members.
var setidSpellings = []string{
	"echo x > chmod-num && chmod 4755 chmod-num",
	"echo x > chmod-us && chmod u+s chmod-us",
	"echo x > chmod-gs && chmod g+s chmod-gs",
	"mkdir dir-gs && chmod g+s dir-gs",
	"mkdir dir-2755 && chmod 2755 dir-2755",
	"cp -p $SRC cp-p",
	"cp -a $SRC cp-a",
	"cp $SRC cp-plain",
	"mkdir tar-x && tar -xpf setid.tar -C tar-x",
	"echo x > chown-suid && chmod 4755 chown-suid; chown $(id -u):$(id -g) chown-suid",
	"mknod char-dev c 1 3",
	"mknod block-dev b 7 0",
	"mknod whiteout c 0 0",
	"./setidattack .",
}

// setidAttack and helperAttack are static programs in testdata that a test runs inside the
// container as a command, each built once per test process.
var (
	setidAttack  = buildtest.Program{Pkg: "./testdata/setidattack", Env: []string{"CGO_ENABLED=0"}}
	helperAttack = buildtest.Program{Pkg: "./testdata/helperattack", Env: []string{"CGO_ENABLED=0"}}
)

// TestNoSetidOrDeviceOnHostMount: commands, through the backend, try every spelling of a
// setuid or setgid file or a device node on the workspace mount. On the host afterwards no
// file in the workspace has either bit or is a device; ordinary modes, FIFOs and sockets
// still work.
func TestNoSetidOrDeviceOnHostMount(t *testing.T) {
	for _, mode := range []string{docker.ModeHelper, docker.ModeExec} {
		t.Run(mode, func(t *testing.T) {
			ws := dockertest.Workspace(t)
			src := dockertest.Workspace(t)
			prepareSetidSources(t, ws, src, setidAttack.Path(t))
			cfg := testConfig(t, ws, mode)
			cfg.Volumes = append(cfg.Volumes, docker.Volume{Host: src, Container: "/src", ReadOnly: true})
			cfg.ReuseContainer = false
			env := newEnv(t, cfg)

			var log strings.Builder
			for _, cmd := range setidSpellings {
				res := mustExec(t, env, backend.Request{Command: "SRC=/src/suid; " + cmd, Dir: "/workspace"})
				log.WriteString("$ " + cmd + "\n" + string(res.Stdout) + string(res.Stderr))
			}
			// The commands did run: what they may do is there.
			if got := sh(t, env, "cd /workspace && echo x > ctl && chmod 700 ctl && stat -c %a ctl && ls tar-x"); !strings.HasPrefix(got, "700\n") || !strings.Contains(got, "plain") {
				t.Errorf("ordinary chmod or tar x: %q", got)
			}
			if out := log.String(); !strings.Contains(out, "control-mkfifo ok") || !strings.Contains(out, "control-chmod-0700 ok") {
				t.Errorf("the attack program did not run, or ordinary calls fail:\n%s", out)
			}
			// The tracer rewrote the chmod and the kernel refused it (Linux checks seccomp
			// again after a tracer's stop), or ptrace itself was refused (gVisor's profile).
			if out := log.String(); !strings.Contains(out, "ptrace-rewrite-chmod-4755 the rewritten chmod failed") && !strings.Contains(out, "ptrace-rewrite-chmod-4755 start a traced child") {
				t.Errorf("the ptrace spelling did not run as planned:\n%s", out)
			}
			if bad := setidOrDevices(t, ws); len(bad) > 0 {
				t.Errorf("left on the host: %s\ncommands said:\n%s", strings.Join(bad, ", "), log.String())
			}
		})
	}
}

// prepareSetidSources puts a setuid file (harmless data) on the read-only volume src, and
// into ws the attack program and an archive whose members ask for setuid, setgid and a
// device.
func prepareSetidSources(t *testing.T, ws, src, attack string) {
	t.Helper()
	suid := filepath.Join(src, "suid")
	must(t, os.WriteFile(suid, []byte("marker\n"), 0o755))
	must(t, os.Chmod(suid, 0o755|fs.ModeSetuid|fs.ModeSetgid))
	copyProgram(t, attack, ws)
	f, err := os.Create(filepath.Join(ws, "setid.tar"))
	must(t, err)
	tw := tar.NewWriter(f)
	for _, h := range []*tar.Header{
		{Name: "plain", Mode: 0o755, Typeflag: tar.TypeReg, Size: 2},
		{Name: "tar-suid", Mode: 0o4755, Typeflag: tar.TypeReg, Size: 2},
		{Name: "tar-sgid", Mode: 0o2755, Typeflag: tar.TypeReg, Size: 2},
		{Name: "tar-sgid-dir/", Mode: 0o2755, Typeflag: tar.TypeDir},
		{Name: "tar-char", Mode: 0o666, Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3},
		{Name: "tar-whiteout", Mode: 0o600, Typeflag: tar.TypeChar},
	} {
		must(t, tw.WriteHeader(h))
		if h.Size > 0 {
			_, err := tw.Write([]byte("x\n"))
			must(t, err)
		}
	}
	must(t, tw.Close())
	must(t, f.Close())
}

// setidOrDevices lists every file under dir with a setuid or setgid bit, or that is a
// device node.
func setidOrDevices(t *testing.T, dir string) []string {
	t.Helper()
	var bad []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if m := fi.Mode(); m&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeDevice|fs.ModeCharDevice) != 0 {
			bad = append(bad, strings.TrimPrefix(p, dir+"/")+" ("+m.String()+")")
		}
		return nil
	})
	must(t, err)
	return bad
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// copyProgram puts the program at p into dir, executable.
func copyProgram(t *testing.T, p, dir string) {
	t.Helper()
	b, err := os.ReadFile(p)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, filepath.Base(p)), b, 0o755))
}
