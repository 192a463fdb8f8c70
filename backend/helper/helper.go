package helper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/procgroup"
	"github.com/airlock-dev/airlock/backend/sandbox"
	"github.com/airlock-dev/airlock/internal/gctune"
)

// A backend on Airlock's own host (local) runs the same helper as a child process: the
// running executable re-executed under an argv[0] of its own, which this package's init
// recognises before anything else runs — in the airlock binary and in any test binary that
// links this package alike. The helper first builds the namespace's filesystem (when it has
// namespaces) with the capabilities that takes, then, on every thread at once, empties its
// bounding set, clears every other set and sets no_new_privs, checks on every thread that
// nothing is left, and only then serves. So the process that runs commands was never
// Airlock's, shares no thread or Landlock domain with it, holds no capability while it
// serves, and cannot reach Airlock: in namespace mode Airlock is not even in its /proc.
//
// Dropping on all threads at once (sandbox.DropAll) rather than executing a second stage
// saves a whole start of this large binary per session, the larger part of a session's
// start (docs/benchmarks.md). The steps that need no capability the set-up still uses (the
// bounding and ambient sets, no_new_privs) are made before the runtime's second thread
// exists (early_cgo.go), so DropAll broadcasts only the capset.

// HelperSpec is what a helper started by [StartHelper] is to be.
type HelperSpec struct {
	// Shell runs command strings.
	Shell string `json:"shell"`
	// TempDir is the commands' private TMPDIR.
	TempDir string `json:"temp_dir"`
	// Namespace, when set, is the filesystem the helper builds in namespaces of its own;
	// nil runs it as a plain child process.
	Namespace *sandbox.Namespace `json:"namespace,omitempty"`
	// Mode is the Landlock + seccomp wall each command gets: auto, landlock or off.
	Mode sandbox.Mode `json:"mode"`
	// Policy is that wall's policy (Hidden cannot travel: the host puts what its deny_names
	// scan found in Protected).
	ReadRoots  []string        `json:"read_roots,omitempty"`
	WriteRoots []string        `json:"write_roots,omitempty"`
	Protected  []string        `json:"protected,omitempty"`
	Network    sandbox.Network `json:"network"`
	// MaxABI, when positive, is the highest Landlock ABI the helper may use (tests play a
	// kernel without Landlock with it).
	MaxABI int `json:"max_abi,omitempty"`
}

const (
	arg0Setup = "airlock-helper"
	specEnv   = "AIRLOCK_HELPER_SPEC"
	// exitNamespace is the setup stage's exit code when the namespace could not be built.
	exitNamespace = 3
)

func init() {
	if os.Args[0] == arg0Setup {
		os.Exit(helperSetup())
	}
}

func readSpec() (HelperSpec, error) {
	var s HelperSpec
	if err := json.Unmarshal([]byte(os.Getenv(specEnv)), &s); err != nil {
		return s, fmt.Errorf("helper spec: %w", err)
	}
	return s, nil
}

// helperSetup builds the namespace, drops every capability on every thread, then serves.
func helperSetup() int {
	// Descriptors this process was handed beyond stdio (not close-on-exec in Airlock's
	// parent) never reach the server or its commands.
	if err := closeInherited(); err != nil {
		fmt.Fprintln(os.Stderr, "airlock helper: close inherited descriptors:", err)
		return 1
	}
	spec, err := readSpec()
	if err != nil {
		fmt.Fprintln(os.Stderr, "airlock helper:", err)
		return 1
	}
	if spec.Namespace != nil {
		if err := spec.Namespace.Enter(); err != nil {
			fmt.Fprintln(os.Stderr, "airlock helper:", err)
			return exitNamespace
		}
	}
	if err := sandbox.DropAll(); err != nil {
		fmt.Fprintln(os.Stderr, "airlock helper: drop capabilities:", err)
		return 1
	}
	return helperServe(spec)
}

// closeInherited closes every descriptor above stdio that is not close-on-exec: those are
// exactly the ones this process inherited across its exec (Go opens every descriptor of its
// own close-on-exec, the runtime's poller among them), and marks whatever is left
// close-on-exec as well.
func closeInherited() error {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range fds {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue // gone (the directory's own descriptor), or this process's own
		}
		if err := unix.Close(fd); err != nil {
			return fmt.Errorf("close %d: %w", fd, err)
		}
	}
	return unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
}

// helperServe is the serving stage, holding no capability: the kernel sandbox for
// commands, then serve.
func helperServe(spec HelperSpec) int {
	_ = os.Unsetenv(specEnv)
	if err := PrepareProcess(); err != nil {
		fmt.Fprintln(os.Stderr, "airlock helper:", err)
		return 1
	}
	if err := sandbox.VerifyDropped(); err != nil {
		fmt.Fprintln(os.Stderr, "airlock helper: refusing to serve holding capabilities:", err)
		return 1
	}
	sb, err := helperSandbox(spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "airlock helper: sandbox:", err)
		return 1
	}
	defer sb.Close()
	opts := ServeOptions{Shell: spec.Shell, Sandbox: sb, TempDir: spec.TempDir}
	if spec.Namespace != nil {
		opts.Isolation = spec.Namespace.Describe()
	} else {
		opts.Isolation = nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	if err := Serve(ctx, os.Stdin, os.Stdout, opts); err != nil {
		fmt.Fprintln(os.Stderr, "airlock helper:", err)
		return 1
	}
	return 0
}

// helperSandbox builds the Landlock + seccomp wall. In namespace mode the mounts keep the
// protected paths out, so Landlock grants the whole tree for reading and the write roots
// for writing without splitting them around the protected paths — but still around the
// system secrets and credential stores the sandbox always adds (sandbox.SystemSecrets,
// sandbox.CredentialDirs), which the mounts also hide: a second wall, kept on purpose at
// the cost of some 200 rules. As a plain child it carries the whole policy, as the only wall.
func helperSandbox(spec HelperSpec) (*sandbox.Sandbox, error) {
	p := sandbox.Policy{ReadRoots: spec.ReadRoots, WriteRoots: spec.WriteRoots, TempDir: spec.TempDir,
		Protected: spec.Protected, Network: spec.Network}
	if spec.Namespace != nil {
		p.ReadRoots, p.SystemRead, p.Protected = []string{"/"}, []string{}, nil
		// The helper has an IPC namespace of its own: SysV IPC reaches only this session.
		p.PrivateIPC = true
		// Everything but the write roots is mounted read-only: metadata changes there fail.
		p.HostReadOnly = true
	}
	var opts []sandbox.Option
	if spec.MaxABI != 0 {
		opts = append(opts, sandbox.WithProbe(func() int { return min(max(spec.MaxABI, 0), sandbox.KernelABI()) }))
	}
	return sandbox.New(spec.Mode, p, opts...)
}

// Helper is a resident helper this process started as its child ([StartHelper]).
type Helper struct {
	Client *Client
	cmd    *exec.Cmd
	stderr *backend.CappedBuffer
	waited chan struct{}
}

// ErrNamespace marks a helper that could not be put in namespaces: the kernel refused to
// make them (no unprivileged user namespaces, a container's seccomp profile) or to build the
// filesystem in them.
var ErrNamespace = errors.New("namespaces unavailable")

// StartHelper starts the helper for spec as a child of this process and waits for its hello.
// A helper that could not get its namespaces fails with an error wrapping [ErrNamespace]
// that says why.
func StartHelper(ctx context.Context, spec HelperSpec, log hclog.Logger) (*Helper, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("helper spec: %w", err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("helper pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_, _ = inR.Close(), inW.Close()
		return nil, fmt.Errorf("helper pipe: %w", err)
	}
	h := &Helper{stderr: NewStderr(), waited: make(chan struct{})}
	env := []string{specEnv + "=" + string(raw), "PATH=/usr/local/bin:/usr/bin:/bin"}
	if home, err := os.UserHomeDir(); err == nil {
		env = append(env, "HOME="+home)
	}
	// The collector's settings, when the operator gave them, are the helper's too (gctune).
	for _, v := range []string{"GOGC", "GOMEMLIMIT"} {
		if s := os.Getenv(v); s != "" {
			env = append(env, v+"="+s)
		}
	}
	// The airlock-helper beside airlock when it is of the same source: it starts in a few
	// milliseconds, where airlock itself initialises every backend's client library first.
	self := "/proc/self/exe"
	if p, _ := Sibling(); p != "" {
		self = p
	}
	h.cmd = &exec.Cmd{Path: self, Args: []string{arg0Setup}, Env: env, Dir: "/",
		Stdin: inR, Stdout: outW, Stderr: h.stderr, SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if spec.Namespace != nil {
		err = spec.Namespace.Start(h.cmd)
	} else {
		err = h.cmd.Start()
	}
	_, _ = inR.Close(), outW.Close()
	if err != nil {
		_, _ = inW.Close(), outR.Close()
		if spec.Namespace != nil {
			return nil, fmt.Errorf("%w: the kernel refused to start a process in new namespaces: %w", ErrNamespace, err)
		}
		return nil, fmt.Errorf("start the helper: %w", err)
	}
	go func() {
		_ = h.cmd.Wait()
		close(h.waited)
	}()
	l, err := Launch(ctx, outR, inW, h.stderr, log)
	if err != nil {
		_ = outR.Close()
		h.kill()
		if spec.Namespace != nil && h.cmd.ProcessState != nil && h.cmd.ProcessState.ExitCode() == exitNamespace {
			return nil, fmt.Errorf("%w: %w", ErrNamespace, err)
		}
		return nil, err
	}
	h.Client = l.Client
	return h, nil
}

// PID is the helper's process ID as this process sees it.
func (h *Helper) PID() int { return h.cmd.Process.Pid }

// Done is closed once the helper has exited.
func (h *Helper) Done() <-chan struct{} { return h.waited }

// Stderr is what the helper said on its standard error (capped).
func (h *Helper) Stderr() string { return string(h.stderr.Bytes()) }

// Close ends the stream — the helper kills what still runs and exits, and with it, in
// namespace mode, everything left in its PID namespace — and waits for it a little before
// killing it.
func (h *Helper) Close() error {
	if h.Client != nil {
		_ = h.Client.Close()
	}
	select {
	case <-h.waited:
		return nil
	case <-time.After(5 * time.Second):
	}
	h.kill()
	return nil
}

func (h *Helper) kill() {
	_ = h.cmd.Process.Kill()
	select {
	case <-h.waited:
	case <-time.After(5 * time.Second):
	}
}

// PrepareProcess makes the process a helper, as every helper's main does before it serves:
//   - not dumpable: a command cannot open the helper's /proc entries (its stream among
//     them), and commands get their own dumpable state back when they exec;
//   - the umask commands get on every backend, not the one of whatever started the helper
//     (sshd sessions commonly run with 077);
//   - the collector's settings (gctune.Helper) and a spare processor (SpareProcessor);
//   - a subreaper, which inherits what a command's setsid children leave behind and kills
//     them when the command ends.
func PrepareProcess() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("refusing to run dumpable: %w", err)
	}
	unix.Umask(backend.Umask)
	gctune.Apply(gctune.Helper)
	SpareProcessor()
	if err := procgroup.EnableSubreaper(); err != nil {
		return fmt.Errorf("subreaper: %w", err)
	}
	return nil
}

// SpareProcessor gives the helper at least two of the Go runtime's processors (GOMAXPROCS),
// also on a host or in a container with one CPU. The thread that reads requests and waits
// for commands (reader.go) spends its time in blocking system calls, holding its
// processor; with only one, every other goroutine (the orphan reaper, a file operation)
// needs the runtime's monitor to take it back, and the monitor, finding no idle processor,
// took it back every 20 µs while commands ran back to back: 25 context switches a command on
// one CPU, where a spare processor gives the monitor nothing to do. The host still runs the
// helper on the CPUs it has; a second processor only lets two of its threads be runnable.
func SpareProcessor() {
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2)
	}
}
