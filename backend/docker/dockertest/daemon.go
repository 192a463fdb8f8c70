package dockertest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/client"
)

// Bounds of a private daemon's life: how long it has to answer after starting, and to exit
// after SIGTERM (it stops its containers first).
const (
	daemonReadyTimeout = 60 * time.Second
	daemonStopTimeout  = 60 * time.Second
)

// Daemon is a dockerd of a test's own, for tests that stop or restart the daemon and so
// must not touch the one other tests share. Its data root, exec root, socket, pid file and
// log all live in Dir; it creates no bridge and leaves iptables alone.
type Daemon struct {
	// Dir holds everything the daemon owns; it is removed when the test ends.
	Dir string
	// Host is the daemon's address, for Config.Host or docker -H.
	Host string

	cli    *client.Client
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

// StartDaemon starts a private dockerd and waits until it answers. The test is skipped when
// it cannot run one (not root, dockerd, docker, tar or busybox missing), unless
// AIRLOCK_REQUIRE_DOCKER=1. The daemon is stopped, and its directory removed, when the test
// ends.
func StartDaemon(t testing.TB) *Daemon {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, "a private dockerd needs root")
	}
	for _, tool := range []string{"dockerd", "docker", "tar", "busybox"} {
		if _, err := exec.LookPath(tool); err != nil {
			unavailable(t, fmt.Sprintf("a private dockerd needs %s (apt-get install docker.io busybox-static): %v", tool, err))
		}
	}
	// A short path: the daemon's sockets (containerd's among them) live under it, and a unix
	// socket path must stay under 108 bytes.
	dir, err := os.MkdirTemp("/run", fmt.Sprintf("airlock-test-%d-", os.Getpid()))
	if err != nil {
		t.Fatalf("private dockerd: %v", err)
	}
	d := &Daemon{Dir: dir, Host: "unix://" + filepath.Join(dir, "docker.sock")}
	t.Cleanup(func() { d.cleanup(t) })
	d.cli, err = client.NewClientWithOpts(client.WithHost(d.Host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatalf("private dockerd: client: %v", err)
	}
	d.Start(t)
	return d
}

// Client returns a client of this daemon; it stays usable across restarts.
func (d *Daemon) Client() *client.Client { return d.cli }

// Start starts the daemon on its data root and waits until it answers.
func (d *Daemon) Start(t testing.TB) {
	t.Helper()
	if d.cmd != nil {
		t.Fatalf("private dockerd at %s is already running", d.Host)
	}
	logf, err := os.OpenFile(filepath.Join(d.Dir, "dockerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("private dockerd: %v", err)
	}
	cmd := exec.Command("dockerd",
		"--data-root", filepath.Join(d.Dir, "data"),
		"--exec-root", filepath.Join(d.Dir, "exec"),
		"--pidfile", filepath.Join(d.Dir, "docker.pid"),
		"-H", d.Host,
		"--bridge=none", "--iptables=false", "--ip-masq=false",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Temporary files in the daemon's directory, not /tmp: its containerd writes a stack dump
	// there whenever dockerd finds it slow to answer (one was left in /tmp in CI), and the
	// directory goes at cleanup.
	tmp := filepath.Join(d.Dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		_ = logf.Close()
		t.Fatalf("private dockerd: %v", err)
	}
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	// Its own session, so that it and what it starts can be killed as a group. Pdeathsig
	// stops it if the test binary dies without running its cleanups (a -timeout panic).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		t.Fatalf("start dockerd: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(exited)
	}()
	d.cmd, d.exited = cmd, exited

	deadline := time.Now().Add(daemonReadyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := d.cli.Ping(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-exited:
			d.cmd = nil
			t.Fatalf("private dockerd exited while starting (%s); its log:\n%s", cmd.ProcessState, d.logTail(40))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("private dockerd did not answer on %s within %s: %v; its log:\n%s", d.Host, daemonReadyTimeout, err, d.logTail(40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop sends the daemon SIGTERM and waits for it to exit. Live restore is off, so it stops
// its containers on the way out, as a daemon restarted by systemd does.
func (d *Daemon) Stop(t testing.TB) {
	t.Helper()
	if d.cmd == nil {
		return
	}
	pid := d.cmd.Process.Pid
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(daemonStopTimeout):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-d.exited
		t.Errorf("private dockerd %d did not exit within %s of SIGTERM; killed it", pid, daemonStopTimeout)
	}
	d.cmd = nil
}

// Image imports the busybox test image ([ImageName]) into the daemon, as [Image] and
// .ci/dockerd.sh do for the shared one.
func (d *Daemon) Image(t testing.TB) string {
	t.Helper()
	root := busyboxRootfs(t)
	cmd := exec.Command("sh", "-c", `tar -C "$1" -c . | docker -H "$2" import -c 'ENV PATH=/bin' - "$3"`,
		"import", root, d.Host, ImageName)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker import %s into %s: %v\n%s", ImageName, d.Host, err, out)
	}
	return ImageName
}

// cleanup stops the daemon, kills what it left running, unmounts what it left mounted and
// removes its directory.
func (d *Daemon) cleanup(t testing.TB) {
	if t.Failed() {
		t.Logf("private dockerd log (last lines):\n%s", d.logTail(40))
	}
	d.Stop(t)
	if d.cli != nil {
		_ = d.cli.Close()
	}
	var errs []error
	for _, pid := range processesUsing(d.Dir) {
		// containerd or a shim that outlived the daemon: started by this test, named by its
		// directory, so it is ours to kill.
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill %d: %w", pid, err))
		}
	}
	mounts, err := mountsUnder(d.Dir)
	if err != nil {
		errs = append(errs, err)
	}
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
		}
	}
	if err := os.RemoveAll(d.Dir); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		t.Errorf("private dockerd cleanup: %v", err)
	}
}

func (d *Daemon) logTail(n int) string {
	b, err := os.ReadFile(filepath.Join(d.Dir, "dockerd.log"))
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// processesUsing lists the processes whose command line mentions dir.
func processesUsing(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), dir+"/") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMountPath(fields[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, sc.Err()
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// busyboxRootfs builds the test image's root filesystem in a temporary directory.
func busyboxRootfs(t testing.TB) string {
	t.Helper()
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatalf("building %s needs busybox (apt-get install busybox-static): %v", ImageName, err)
	}
	root := t.TempDir()
	for _, d := range []string{"bin", "etc", "tmp", "workspace", "proc", "sys", "dev"} {
		must(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	must(t, os.Chmod(filepath.Join(root, "tmp"), 0o1777))
	must(t, os.Chmod(filepath.Join(root, "workspace"), 0o777))
	data, err := os.ReadFile(bb)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(root, "bin", "busybox"), data, 0o755))
	list, err := exec.Command(bb, "--list").Output()
	must(t, err)
	for _, applet := range strings.Fields(string(list)) {
		if applet != "busybox" {
			must(t, os.Symlink("busybox", filepath.Join(root, "bin", applet)))
		}
	}
	must(t, os.WriteFile(filepath.Join(root, "etc", "passwd"),
		[]byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "etc", "group"), []byte("root:x:0:\nnogroup:x:65534:\n"), 0o644))
	return root
}

// unavailable skips the test, or fails it when AIRLOCK_REQUIRE_DOCKER=1.
func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("AIRLOCK_REQUIRE_DOCKER") == "1" {
		t.Fatalf("docker required (AIRLOCK_REQUIRE_DOCKER=1): %s", why)
	}
	t.Skip(why)
}
