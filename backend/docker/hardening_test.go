package docker_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/docker/dockertest"
)

func TestHardeningInEffect(t *testing.T) {
	cli := dockertest.Client(t)
	ws := dockertest.Workspace(t)
	ro := dockertest.Workspace(t)
	cfg := testConfig(t, ws, docker.ModeHelper)
	cfg.Volumes = append(cfg.Volumes, docker.Volume{Host: ro, Container: "/data", ReadOnly: true})
	cfg.ReuseContainer = false
	env := newEnv(t, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := cli.ContainerInspect(ctx, env.ContainerID())
	if err != nil {
		t.Fatal(err)
	}
	hc := info.HostConfig
	// The helper's two, which it needs to start commands as their user; commands hold none
	// (checked from inside below).
	if !slices.Equal(hc.CapDrop, []string{"ALL"}) || !slices.Equal(hc.CapAdd, []string{"CAP_SETGID", "CAP_SETUID"}) {
		t.Errorf("caps: drop %v add %v", hc.CapDrop, hc.CapAdd)
	}
	if !slices.Contains(hc.SecurityOpt, "no-new-privileges:true") && !slices.Contains(hc.SecurityOpt, "no-new-privileges") {
		t.Errorf("security opts: %v", hc.SecurityOpt)
	}
	if !slices.ContainsFunc(hc.SecurityOpt, func(o string) bool { return strings.HasPrefix(o, "seccomp={") }) {
		t.Errorf("no seccomp profile of airlock's own in the security opts")
	}
	if hc.PidsLimit == nil || *hc.PidsLimit != 256 || hc.Memory != 256<<20 || hc.NanoCPUs != 1e9 {
		t.Errorf("limits: pids %v memory %d cpus %d", hc.PidsLimit, hc.Memory, hc.NanoCPUs)
	}
	if string(hc.NetworkMode) != "none" || hc.Init == nil || !*hc.Init || hc.Privileged {
		t.Errorf("network %q init %v privileged %v", hc.NetworkMode, hc.Init, hc.Privileged)
	}
	if info.Config.User != "0:0" { // the init and its sleep: no command can end them
		t.Errorf("main process user %q", info.Config.User)
	}
	if opts, ok := hc.Tmpfs["/tmp"]; !ok || !strings.Contains(opts, "exec") || strings.Contains(opts, "noexec") {
		t.Errorf("/tmp tmpfs: %q", hc.Tmpfs)
	}
	var mounts []string
	for _, m := range info.Mounts {
		if m.Type == "bind" {
			mounts = append(mounts, m.Source+":"+m.Destination+":"+strconv.FormatBool(m.RW))
		}
	}
	slices.Sort(mounts)
	want := []string{ro + ":/data:false", ws + ":/workspace:true"}
	slices.Sort(want)
	if !slices.Equal(mounts, want) {
		t.Errorf("bind mounts = %q, want exactly %q", mounts, want)
	}
	for _, m := range info.Mounts {
		if strings.Contains(m.Source, "docker.sock") || m.Source == "/" {
			t.Errorf("forbidden mount %+v", m)
		}
	}

	// From inside.
	if got := sh(t, env, "id -u; id -g"); got != "65534\n65534" {
		t.Errorf("id: %q", got)
	}
	res := mustExec(t, env, backend.Request{Command: "chown 65534:65534 /bin/busybox"})
	if res.ExitCode == 0 {
		t.Errorf("chown of a root-owned file succeeded")
	}
	// /proc/net/dev rather than /sys/class/net, which gVisor's sysfs does not have.
	if got := sh(t, env, `awk -F: 'NR > 2 { gsub(/ /, "", $1); print $1 }' /proc/net/dev`); got != "lo" {
		t.Errorf("network interfaces: %q, want only lo", got)
	}
	for _, set := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
		if got := sh(t, env, "grep "+set+" /proc/self/status"); !strings.HasSuffix(got, "0000000000000000") {
			t.Errorf("commands' capabilities: %q", got)
		}
	}
	if got := sh(t, env, "grep NoNewPrivs /proc/self/status"); !strings.HasSuffix(got, "1") {
		t.Errorf("%q", got)
	}
	if res := mustExec(t, env, backend.Request{Command: "touch /data/x"}); res.ExitCode == 0 {
		t.Errorf("wrote to a read-only volume")
	}
	sh(t, env, "echo hi > /workspace/from-container && cp /bin/busybox /tmp/true && /tmp/true")
	if _, err := os.Stat(ws + "/from-container"); err != nil {
		t.Errorf("workspace write did not reach the host: %v", err)
	}
	if d := env.Describe(); !d.Capabilities.FilesystemIsolation || !d.Capabilities.NetworkIsolation || !d.Capabilities.WritableHostMounts {
		t.Errorf("capabilities: %+v", d.Capabilities)
	}
}

func TestForkBombStoppedByPidsLimit(t *testing.T) {
	ws := dockertest.Workspace(t)
	cfg := testConfig(t, ws, docker.ModeHelper)
	cfg.ReuseContainer = false
	cfg.PidsLimit = 64
	env := newEnv(t, cfg)
	// The command can only end by its timeout, which must stop the whole tree. So the
	// shell forks only before the bomb has taken the PIDs, and then waits in a built-in:
	// it starts the sleep and the subshell that runs the bomb, then waits for the sleep.
	// A fork that fails is fatal to busybox sh: with "b; sleep 30" the shell could find no
	// PID left for the sleep, and with "sleep 30 & b; wait" none for the second command
	// of the pipeline b | b, which the shell forks itself (once in 8 .ci/run runs).
	res := mustExec(t, env, backend.Request{Command: "sleep 30 & (b() { b | b & }; b); wait", Timeout: 3 * time.Second})
	if !res.TimedOut {
		t.Errorf("fork bomb result: %+v", res)
	}
	// The container is still usable and the bomb is gone.
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, _ := strconv.Atoi(sh(t, env, "ls /proc | grep -c '^[0-9]'"))
		if n < 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d processes left in the container after the bomb", n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Host variables reach commands only through env_passthrough (by default LANG, LC_* and
// TERM among them, as configs/examples/docker.toml says); secrets never do, whatever the
// list says, and neither do PATH, HOME or variables the list does not name.
func TestHostSecretsAndPathStayOut(t *testing.T) {
	t.Setenv("MY_API_TOKEN", "host-secret-token")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "host-secret-aws")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("LC_AIRLOCK_TEST", "from-host")
	t.Setenv("AIRLOCK_TEST_UNLISTED", "host-unlisted")
	for _, mode := range []string{docker.ModeHelper, docker.ModeExec} {
		t.Run(mode, func(t *testing.T) {
			env := newEnv(t, testConfig(t, sharedWorkspace(t), mode))
			out := sh(t, env, "env")
			if strings.Contains(out, "host-secret") {
				t.Errorf("a host secret reached the container:\n%s", out)
			}
			if !strings.Contains(out, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin") || strings.Contains(out, "HOME=/root") {
				t.Errorf("PATH/HOME not the container's:\n%s", out)
			}
			if !strings.Contains(out, "LANG=C.UTF-8") || !strings.Contains(out, "LC_AIRLOCK_TEST=from-host") {
				t.Errorf("passthrough variable missing:\n%s", out)
			}
			if strings.Contains(out, "host-unlisted") {
				t.Errorf("a variable env_passthrough does not name reached the container:\n%s", out)
			}
		})
	}
}

func TestWorkdirSymlinkOutRefused(t *testing.T) {
	for _, mode := range []string{docker.ModeHelper, docker.ModeExec} {
		t.Run(mode, func(t *testing.T) {
			env := newEnv(t, testConfig(t, sharedWorkspace(t), mode))
			name := ".escape-" + mode + strconv.Itoa(os.Getpid())
			sh(t, env, "ln -sfn /etc "+name)
			t.Cleanup(func() { _, _ = env.Exec(context.Background(), backend.Request{Command: "rm -f " + name}) })
			_, err := env.Exec(context.Background(), backend.Request{Command: "pwd", Dir: name})
			if !errors_Is(err, backend.ErrOutsideWorkspace) {
				t.Errorf("symlink out of the workspace: %v", err)
			}
		})
	}
}
