package local_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/backend/sandbox"
)

// The attacks of issue 19 against the local backend as configured by default (sandbox
// auto): each payload is a harmless marker, and each test was seen to fail against the
// Landlock-from-a-locked-thread design it replaces.

// protectedWorkspace is a workspace whose root holds .env (a deny_names match), the
// configuration and the ledger, as most projects' do; it returns the environment and the
// protected files' contents.
func protectedWorkspace(t *testing.T, mode sandbox.Mode) (*local.Env, string, map[string]string) {
	t.Helper()
	ws := t.TempDir()
	files := map[string]string{
		".env":                 "API_KEY=marker-secret-env\n",
		"airlock.toml":         "# marker-secret-config\n",
		"airlock-ledger.jsonl": "{\"marker\":\"secret-ledger\"}\n",
		"main.txt":             "hello world\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env, err := local.New(local.Config{Workspace: ws, DefaultTimeout: time.Minute, Sandbox: local.SandboxConfig{
		Mode:      mode,
		Protected: []string{filepath.Join(ws, "airlock.toml"), filepath.Join(ws, "airlock-ledger.jsonl")},
		Hidden:    func(rel string) bool { return rel == ".env" || strings.HasPrefix(rel, ".env.") },
	}})
	if err != nil {
		t.Fatalf("local.New: %v", err)
	}
	t.Cleanup(func() { _ = env.Close(context.Background()) })
	return env, ws, files
}

func sh(t *testing.T, env backend.Environment, cmd string, extra map[string]string) backend.Result {
	t.Helper()
	res, err := env.Exec(context.Background(), backend.Request{Command: cmd, Env: extra})
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return res
}

// TestOrdinaryWorkAtAProtectedRoot: with .env, airlock.toml and the ledger at the
// workspace's root, the everyday commands that make new entries there work, and the
// protected files stay unreadable and unchanged.
func TestOrdinaryWorkAtAProtectedRoot(t *testing.T) {
	env, ws, files := protectedWorkspace(t, sandbox.ModeAuto)
	work := []struct {
		name, cmd, needs string
		made             string
	}{
		{"mkdir", "mkdir node_modules", "", "node_modules"},
		{"new file", "echo hi > new.txt", "", "new.txt"},
		{"sed -i", "sed -i s/hello/bye/ main.txt && grep -q bye main.txt", "", "main.txt"},
		{"git init", "git init -q .", "git", ".git/HEAD"},
		{"npm init", "npm init -y >/dev/null", "npm", "package.json"},
		{"go mod init", "go mod init example.com/marker", "go", "go.mod"},
	}
	for _, w := range work {
		t.Run(w.name, func(t *testing.T) {
			if w.needs != "" {
				if _, err := exec.LookPath(w.needs); err != nil {
					t.Skipf("%s not installed", w.needs)
				}
			}
			res := sh(t, env, w.cmd, map[string]string{"GOTOOLCHAIN": "local", "GOFLAGS": "-mod=mod"})
			if res.ExitCode != 0 {
				t.Fatalf("%s: exit %d: %s%s (notes %q)", w.cmd, res.ExitCode, res.Stdout, res.Stderr, res.Notes)
			}
			if _, err := os.Stat(filepath.Join(ws, w.made)); err != nil {
				t.Fatalf("%s made no %s: %v", w.cmd, w.made, err)
			}
		})
	}
	res := sh(t, env, `for f in .env airlock.toml airlock-ledger.jsonl; do cat $f; echo changed >> $f; rm -f $f; mv $f moved; done 2>&1; cat moved 2>&1; true`, nil)
	if strings.Contains(string(res.Stdout), "marker") {
		t.Errorf("a protected file was read: %q", res.Stdout)
	}
	for name, body := range files {
		if name == "main.txt" {
			continue
		}
		if got, err := os.ReadFile(filepath.Join(ws, name)); err != nil || string(got) != body {
			t.Errorf("%s changed: %q, %v", name, got, err)
		}
	}
}

// TestCannotSignalAirlock: a command signals its parent, Airlock's process by its PID and
// every thread of it by pidfd_send_signal; none of it reaches this process (which stands in
// for Airlock and watches for SIGUSR1, the marker).
func TestCannotSignalAirlock(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	got := make(chan os.Signal, 8)
	signal.Notify(got, syscall.SIGUSR1)
	defer signal.Stop(got)
	env := newEnv(t)
	attack := `import os, signal, sys
pid = int(sys.argv[1])
targets = {os.getppid(), pid}
for p in list(targets):
    try:
        targets.update(int(t) for t in os.listdir('/proc/%d/task' % p))
    except OSError:
        pass
for p in targets:
    try:
        os.kill(p, signal.SIGUSR1)
    except OSError:
        pass
    for path in ('/proc/%d' % p, '/proc/%d/task/%d' % (pid, p)):
        try:
            fd = os.open(path, os.O_RDONLY)
            signal.pidfd_send_signal(fd, signal.SIGUSR1)
        except OSError:
            pass
    try:
        signal.pidfd_send_signal(os.pidfd_open(p), signal.SIGUSR1)
    except OSError:
        pass
print("tried", sorted(targets))
`
	res, err := env.Exec(context.Background(), backend.Request{Argv: []string{py, "-c", attack, fmt.Sprint(os.Getpid())}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s%s", res.Stdout, res.Stderr)
	select {
	case s := <-got:
		t.Fatalf("a command signalled Airlock's process: %v", s)
	case <-time.After(300 * time.Millisecond):
	}
	if out := sh(t, env, "echo still-served", nil); !strings.Contains(string(out.Stdout), "still-served") {
		t.Fatalf("the environment stopped serving: %+v", out)
	}
}

// TestRepositoryCodeCannotBePlanted: a command cannot write .git/hooks/pre-commit or
// .git/config (core.fsmonitor), nor swap .git for a copy it controls; git itself works.
func TestRepositoryCodeCannotBePlanted(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ws := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", ws).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	env, err := local.New(local.Config{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close(context.Background())
	config, _ := os.ReadFile(filepath.Join(ws, ".git/config"))
	res := sh(t, env, `echo 'echo marker' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit
git config core.fsmonitor 'echo marker'; echo '[core] fsmonitor = marker' >> .git/config
mv .git .git-old && mkdir -p .git/hooks && echo marker > .git/hooks/pre-commit
echo x > tracked && git add tracked && git -c user.email=a@b -c user.name=a commit -qm x && echo committed`, nil)
	t.Logf("%s%s notes %q", res.Stdout, res.Stderr, res.Notes)
	if _, err := os.Stat(filepath.Join(ws, ".git/hooks/pre-commit")); err == nil {
		t.Error(".git/hooks/pre-commit was written")
	}
	if got, _ := os.ReadFile(filepath.Join(ws, ".git/config")); string(got) != string(config) {
		t.Errorf(".git/config changed:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(ws, ".git-old")); err == nil {
		t.Error(".git was renamed away")
	}
	if !strings.Contains(string(res.Stdout), "committed") {
		t.Errorf("git commit did not work in the sandbox: %s", res.Stderr)
	}
}

// TestSetsidChildDiesWithTheTree: a process that left its command's group and session
// (setsid) is killed with the command on timeout; its heartbeat stops.
func TestSetsidChildDiesWithTheTree(t *testing.T) {
	env := newEnv(t)
	ws := env.Describe().Workspace
	res, err := env.Exec(context.Background(), backend.Request{
		// The beat is renamed into place: a kill between the truncation and the write of
		// "date > beat" would otherwise leave it empty, as if the child never ran.
		Command: `setsid sh -c 'while :; do date +%s%N > beat.new; mv beat.new beat; sleep 0.05; done' </dev/null >/dev/null 2>&1 &
while [ ! -s beat ]; do sleep 0.01; done; sleep 30`,
		Timeout: 3 * time.Second,
	})
	if err != nil || !res.TimedOut {
		t.Fatalf("want a timeout: %v %+v", err, res)
	}
	time.Sleep(300 * time.Millisecond)
	first, _ := os.ReadFile(filepath.Join(ws, "beat"))
	time.Sleep(500 * time.Millisecond)
	second, _ := os.ReadFile(filepath.Join(ws, "beat"))
	if len(first) == 0 {
		t.Fatal("the setsid child never ran")
	}
	if string(first) != string(second) {
		t.Fatalf("the setsid child outlived its command's timeout: %q then %q", first, second)
	}
}

// TestSetsidChildDiesWhenTheCommandEnds: a process that left its command's group and
// session (setsid) is killed and reaped before the command's result comes back, in both
// sandbox modes. The helper runs each command on a restricted thread, which may signal only
// the command's own processes; the sweep of escapees runs elsewhere (procgroup.Spec.Restricted).
func TestSetsidChildDiesWhenTheCommandEnds(t *testing.T) {
	inEachSandboxMode(t, func(t *testing.T, env *local.Env) {
		// A first command lets the sandbox make its restricted threads, so that the
		// second runs whole on one of them, as commands of a session do.
		sh(t, env, "true", nil)
		res := sh(t, env, `setsid sh -c 'echo $$ > escapee.pid; exec sleep 30' </dev/null >/dev/null 2>&1 &
while [ ! -s escapee.pid ]; do sleep 0.01; done; echo started`, nil)
		if res.ExitCode != 0 || string(res.Stdout) != "started\n" {
			t.Fatalf("the command did not start its escapee: %+v", res)
		}
		// Seen from the helper's side (its PID namespace, where there is one).
		res = sh(t, env, `test -d /proc/$(cat escapee.pid) && echo alive || echo gone`, nil)
		if got := strings.TrimSpace(string(res.Stdout)); got != "gone" {
			t.Fatalf("the setsid child outlived its command: %q (stderr %q)", got, res.Stderr)
		}
	})
}

// inEachSandboxMode runs f on a new environment in namespace mode and in Landlock mode, as
// subtests, each where the machine has it.
func inEachSandboxMode(t *testing.T, f func(t *testing.T, env *local.Env)) {
	for _, mode := range []sandbox.Mode{sandbox.ModeNamespaces, sandbox.ModeLandlock} {
		t.Run(string(mode), func(t *testing.T) {
			if mode == sandbox.ModeNamespaces {
				requireNamespaces(t)
			} else {
				requireLandlock(t)
			}
			f(t, newEnvMode(mode)(t).(*local.Env))
		})
	}
}

// TestNoTerminal: commands have no /dev/tty to push input into the person's shell with.
func TestNoTerminal(t *testing.T) {
	env := newEnv(t)
	res := sh(t, env, `[ -e /dev/tty ] && echo tty-present; (exec 3</dev/tty) 2>/dev/null && echo tty-opened; ls /dev`, nil)
	if strings.Contains(string(res.Stdout), "tty-") {
		t.Fatalf("a command reached /dev/tty: %s", res.Stdout)
	}
}

// TestHelperHoldsNoCapabilities: no thread of the helper that serves commands holds a
// capability in any set, even when Airlock runs as root, and each has no_new_privs (the
// helper drops them on all its threads at once, without a second exec). The one exception:
// run by an unprivileged user, the fallback's helper keeps its bounding set, which it holds
// no capability to empty and which grants nothing under no_new_privs (sandbox.DropAll).
func TestHelperHoldsNoCapabilities(t *testing.T) {
	inEachSandboxMode(t, func(t *testing.T, env *local.Env) {
		boundingKept := os.Geteuid() != 0 && env.Describe().Mode == "helper-child"
		// A command first, so that the helper has made the threads it serves with.
		sh(t, env, "true", nil)
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", env.HelperPID()))
		if err != nil {
			t.Fatal(err)
		}
		if len(tasks) < 2 {
			t.Fatalf("helper has %d threads; the test means to check several", len(tasks))
		}
		for _, task := range tasks {
			status, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", env.HelperPID(), task.Name()))
			if err != nil {
				t.Fatal(err)
			}
			caps := 0
			for _, line := range strings.Split(string(status), "\n") {
				if strings.HasPrefix(line, "Cap") {
					caps++
					if boundingKept && strings.HasPrefix(line, "CapBnd:") {
						continue
					}
					if !strings.HasSuffix(line, "0000000000000000") {
						t.Errorf("helper thread %s: %s", task.Name(), line)
					}
				}
				if strings.HasPrefix(line, "NoNewPrivs:") && !strings.HasSuffix(line, "1") {
					t.Errorf("helper thread %s: %s", task.Name(), line)
				}
			}
			if caps != 5 {
				t.Errorf("helper thread %s: %d Cap lines in its status, want 5", task.Name(), caps)
			}
		}
	})
}

// TestFallbackSaysWhatIsMissing: where the helper cannot have namespaces, mode auto runs it
// without, and Describe and every result say which guarantees are missing; mode namespaces
// refuses to start, saying why and how to choose.
func TestFallbackSaysWhatIsMissing(t *testing.T) {
	requireLandlock(t)
	const why = "played: this host refuses user namespaces"
	env, err := local.New(local.Config{Workspace: t.TempDir()}, local.WithoutNamespaces(why))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close(context.Background())
	if env.Isolation() != "child" {
		t.Fatalf("isolation %q", env.Isolation())
	}
	notes := strings.Join(env.Describe().Notes, "\n")
	if !strings.Contains(notes, why) || !strings.Contains(notes, "missing: ") || !strings.Contains(notes, "no PID namespace") {
		t.Errorf("Describe does not say what is missing:\n%s", notes)
	}
	res := sh(t, env, "true", nil)
	if got := strings.Join(res.Notes, "\n"); !strings.Contains(got, "missing: ") || !strings.Contains(got, why) {
		t.Errorf("a result's notes do not say what is missing: %q", res.Notes)
	}
	if !env.Describe().Capabilities.KernelSandbox {
		t.Error("Landlock + seccomp not enforced in the fallback")
	}
	const metadata = "not enforced in this mode: chmod, utime and user xattrs"
	if !strings.Contains(notes, metadata) {
		t.Errorf("the fallback does not say metadata outside the roots is left open:\n%s", notes)
	}
	// In namespace mode the read-only mounts refuse it, and the notes must not say otherwise.
	requireNamespaces(t)
	ns, err := local.New(local.Config{Workspace: t.TempDir(), Sandbox: local.SandboxConfig{Mode: sandbox.ModeNamespaces}})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close(context.Background())
	if nsNotes := strings.Join(ns.Describe().Notes, "\n"); strings.Contains(nsNotes, metadata) {
		t.Errorf("namespace mode says metadata is not enforced, which its read-only mounts do:\n%s", nsNotes)
	}
	_, err = local.New(local.Config{Workspace: t.TempDir(), Sandbox: local.SandboxConfig{Mode: sandbox.ModeNamespaces}}, local.WithoutNamespaces(why))
	if err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), `sandbox = "auto"`) {
		t.Fatalf("mode namespaces without them: %v", err)
	}
}

// A shell configured under a directory the namespace sandbox makes empty (/tmp here) stays
// reachable: its directory is brought back, read-only. A shell elsewhere (/bin/sh) needs
// nothing brought back, and its directory is not scanned.
func TestShellUnderACover(t *testing.T) {
	requireNamespaces(t)
	dir := t.TempDir()
	if !sandbox.Covered(dir) {
		t.Skipf("%s is under no cover", dir)
	}
	data, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	shell := filepath.Join(dir, "mysh")
	if err := os.WriteFile(shell, data, 0o755); err != nil {
		t.Fatal(err)
	}
	env, err := local.New(local.Config{Workspace: t.TempDir(), Shell: shell, Sandbox: local.SandboxConfig{Mode: sandbox.ModeNamespaces}})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close(context.Background())
	res := sh(t, env, "echo ran", nil)
	if res.ExitCode != 0 || strings.TrimSpace(string(res.Stdout)) != "ran" {
		t.Fatalf("a shell under /tmp: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if res := sh(t, env, "echo x > "+shell, nil); res.ExitCode == 0 {
		t.Error("the shell's directory, brought back, is writable")
	}
}
