// Package helpercmd is the resident helper's command line, `helper [flags]`, shared by the
// airlock binary (`airlock helper`) and the small airlock-helper binary built from the same
// source (cmd/airlock-helper).
//
// The Docker, SSH and Kubernetes backends start it inside their environment; it speaks the
// helper protocol on stdin and stdout and reads no configuration, files or variables of the
// host: everything a command needs arrives with the request. It lives apart from cmd/airlock
// so that a helper binary can be built that links only the helper: the airlock binary links
// every backend's client library (84 MB, ~400 packages initialised at start), the helper
// needs none of them (~6 MB), which makes it faster to start, smaller to copy into a
// container or onto a host, and smaller in memory.
package helpercmd

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/airlock-dev/airlock/backend/helper"
	"github.com/airlock-dev/airlock/backend/sandbox"
)

// Usage is the command's synopsis after the program's name.
const Usage = helper.Subcommand + " [--shell SH] [--touch FILE] [--run-as UID:GID] [--sandbox MODE ...]  (started by the docker, ssh and kubernetes backends; speaks the helper protocol on stdin/stdout)"

// Main runs the helper with args (the flags after [helper.Subcommand]) on in and out, and returns the
// process's exit code: 0 when the stream ended, 2 for bad flags, 1 for anything that kept
// it from serving. prog names the program in messages and usage.
func Main(prog string, args []string, in io.Reader, out, errw io.Writer) int {
	fs := flag.NewFlagSet(helper.Subcommand, flag.ContinueOnError)
	var usage bytes.Buffer
	fs.SetOutput(&usage)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s %s\n\nFlags:\n", prog, Usage)
		fs.PrintDefaults()
	}
	touch := fs.String("touch", "", "file whose mtime is set each time a command starts (a last-use mark for gc)")
	shell := fs.String("shell", "/bin/sh", "shell that runs command strings")
	runAs := fs.String("run-as", "", "UID:GID commands run as, while the helper, started as root, keeps root as its real user so that commands cannot signal it")
	buildSandbox := sandboxFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, _ = out.Write(usage.Bytes())
			return 0
		}
		_, _ = errw.Write(usage.Bytes())
		return 2
	}
	say := func(what string, err error) int {
		fmt.Fprintf(errw, "%s %s: %s%v\n", prog, helper.Subcommand, what, err)
		return 1
	}
	// Commands run as the helper's own user. Not dumpable, the helper's /proc entries (its
	// stdin and stdout among them) belong to root, so a command cannot write frames into the
	// stream or read other commands' requests (see helper.PrepareProcess).
	if err := helper.PrepareProcess(); err != nil {
		return say("", err)
	}
	sb, tmp, cleanup, err := buildSandbox()
	if err != nil {
		return say("sandbox: ", err)
	}
	defer cleanup()
	var spawner *helper.Spawner
	if *runAs != "" {
		r, err := helper.ParseRunAs(*runAs)
		if err == nil && sb != nil {
			err = errors.New("run-as: not with a kernel sandbox")
		}
		if err == nil {
			spawner, err = r.Enter()
		}
		if err != nil {
			return say("", err)
		}
	}
	prewarmThreads(threads)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	if err := helper.Serve(ctx, in, out, helper.ServeOptions{Shell: *shell, TouchFile: *touch, Sandbox: sb, TempDir: tmp, Spawner: spawner}); err != nil {
		return say("", err)
	}
	return 0
}

// threads is how many OS threads the helper makes before it serves.
const threads = 16

// prewarmThreads makes the Go runtime start n OS threads now, which it then keeps idle for
// later use. The helper shares its container's pids limit with the commands it runs: once a
// fork bomb has taken every PID, a runtime that needs one more thread dies ("failed to create
// new OS thread"), and with it every later call. Threads made up front are never given back.
//
// Each of n goroutines locks itself to a thread and waits until all n hold one, so the
// runtime must make n threads at once; unlocked, they return to the runtime's idle list.
// (Sleeping 20 ms in a system call did the same by making the runtime hand each sleeper's
// scheduling slot to a new thread, and cost 20 ms of every helper start.)
func prewarmThreads(n int) {
	var held, done sync.WaitGroup
	release := make(chan struct{})
	held.Add(n)
	done.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			held.Done()
			<-release
			runtime.UnlockOSThread()
		}()
	}
	held.Wait()
	close(release)
	done.Wait()
}

// sandboxFlags registers the helper's sandbox flags; the function it returns builds the
// sandbox and the commands' private temp directory once the flags are parsed. The backend
// that starts the helper passes the roots as the remote host sees them.
func sandboxFlags(fs *flag.FlagSet) func() (*sandbox.Sandbox, string, func(), error) {
	mode := fs.String("sandbox", "off", "kernel sandbox for commands: auto, landlock or off")
	var rw, ro rootList
	fs.Var(&rw, "sandbox-write", "a directory commands may write (repeatable)")
	fs.Var(&ro, "sandbox-read", "a directory commands may read (repeatable)")
	var connect portList
	fs.Var(&connect, "sandbox-connect", "a TCP port commands may connect to, e.g. the egress proxy's (repeatable)")
	return func() (*sandbox.Sandbox, string, func(), error) {
		m, err := sandbox.ParseMode(*mode)
		if err != nil {
			return nil, "", nil, err
		}
		if m == sandbox.ModeOff {
			return nil, "", func() {}, nil
		}
		tmp, err := os.MkdirTemp("", "airlock-helper-")
		if err != nil {
			return nil, "", nil, fmt.Errorf("temp dir: %w", err)
		}
		sb, err := sandbox.New(m, sandbox.Policy{ReadRoots: append(ro, rw...), WriteRoots: rw, TempDir: tmp,
			Network: sandbox.Network{ConnectTCP: connect}})
		if err != nil {
			_ = os.RemoveAll(tmp)
			return nil, "", nil, err
		}
		return sb, tmp, func() { _ = sb.Close(); _ = os.RemoveAll(tmp) }, nil
	}
}

type rootList []string

func (r *rootList) String() string { return strings.Join(*r, ",") }
func (r *rootList) Set(v string) error {
	if !strings.HasPrefix(v, "/") {
		return fmt.Errorf("%q is not an absolute path", v)
	}
	*r = append(*r, v)
	return nil
}

type portList []uint16

func (p *portList) String() string { return fmt.Sprint([]uint16(*p)) }
func (p *portList) Set(v string) error {
	n, err := strconv.ParseUint(v, 10, 16)
	if err != nil || n == 0 {
		return fmt.Errorf("%q is not a TCP port", v)
	}
	*p = append(*p, uint16(n))
	return nil
}
