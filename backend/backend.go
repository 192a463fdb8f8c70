package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Environment is a place where commands run: a local workspace, a container, a remote host.
//
// Implementations are safe for concurrent use. Exec must honour ctx and [Request.Timeout] by
// killing the whole process tree the command started, and must return what was captured up to
// that point.
type Environment interface {
	// Exec runs one command to completion. A command that ran and exited non-zero, timed out
	// or was cancelled returns a Result and a nil error; an error means it could not run.
	Exec(ctx context.Context, req Request) (Result, error)
	// Describe reports what the environment is and what isolation it really gives.
	Describe() Description
	// Close releases what the environment holds. Exec after Close returns ErrClosed.
	Close(ctx context.Context) error
}

// Umask is the file mode creation mask commands run with, on every backend and in every
// mode, whatever the umask of the process or the remote session that starts them: what a
// command creates is rw-r--r-- (rwxr-xr-x for directories) everywhere.
const Umask = 0o022

// Request is one command to run.
type Request struct {
	// Command is a shell string run by the environment's POSIX shell (sh -c). Exactly one of
	// Command and Argv is set.
	Command string
	// Argv runs a program directly, without a shell.
	Argv []string
	// Dir is the working directory: relative paths are taken from the workspace, absolute
	// ones must lie inside it. Empty means the workspace itself.
	Dir string
	// Env holds extra variables for this command. Names that look like secrets are dropped
	// (see [IsSecretName]).
	Env map[string]string
	// Stdin, when set, is streamed to the command's standard input.
	Stdin io.Reader
	// Timeout bounds the run; zero means the environment's default.
	Timeout time.Duration
	// MaxOutputBytes caps what is kept of each of stdout and stderr; zero means the
	// environment's default.
	MaxOutputBytes int64
	// Stdout and Stderr, when set, ask for a live copy of the output as it arrives (for a
	// person watching `airlock exec`). What the Result keeps is capped either way. A backend
	// that streams sets Result.Streamed; otherwise the caller shows the kept output when the
	// command ends.
	Stdout io.Writer
	Stderr io.Writer
}

// Validate reports a request that no environment can run.
func (r Request) Validate() error {
	switch {
	case r.Command == "" && len(r.Argv) == 0:
		return fmt.Errorf("%w: one of command and argv is required", ErrInvalidRequest)
	case r.Command != "" && len(r.Argv) > 0:
		return fmt.Errorf("%w: command and argv are exclusive", ErrInvalidRequest)
	case len(r.Argv) > 0 && r.Argv[0] == "":
		return fmt.Errorf("%w: argv[0] is empty", ErrInvalidRequest)
	case r.Timeout < 0:
		return fmt.Errorf("%w: timeout is negative", ErrInvalidRequest)
	case r.MaxOutputBytes < 0:
		return fmt.Errorf("%w: max output bytes is negative", ErrInvalidRequest)
	}
	return nil
}

// Effective returns the request's timeout and output cap, taking an environment's
// defaults where the request leaves them zero.
func (r Request) Effective(defaultTimeout time.Duration, defaultMaxOutput int64) (time.Duration, int64) {
	timeout, capBytes := r.Timeout, r.MaxOutputBytes
	if timeout == 0 {
		timeout = defaultTimeout
	}
	if capBytes == 0 {
		capBytes = defaultMaxOutput
	}
	return timeout, capBytes
}

// Result is what a command did.
type Result struct {
	ExitCode int
	Stdout   []byte
	Stderr   []byte
	// Truncated is set when either stream passed its cap; the kept bytes then carry a marker.
	Truncated bool
	// StdoutBytes and StderrBytes count everything the command wrote, kept or not.
	StdoutBytes int64
	StderrBytes int64
	Duration    time.Duration
	// TimedOut is set when the command's timeout ended it.
	TimedOut bool
	// Cancelled is set when the caller's context ended it.
	Cancelled bool
	// Streamed is set when the output was also copied live to Request.Stdout/Stderr.
	Streamed bool
	// Notes tell the caller about the environment rather than the command, for example that
	// a container was recreated or a connection re-established before the command ran, or
	// (beginning with [RefusedNote]) what the sandbox refused the command.
	Notes []string
}

// RefusedNote begins a result's note that says which rule of the sandbox refused a command
// something and what to do instead: the model reads it among the notes, and a front end
// that shows a person the command's output (airlock exec) shows it too.
const RefusedNote = "sandbox refused: "

// Description says what an environment is.
type Description struct {
	// Kind is the backend's name: "local", "docker", "ssh".
	Kind string
	// Mode is how commands are started, for backends with more than one way ("helper",
	// "exec", "session").
	Mode string
	// Workspace is the absolute path, as the environment sees it, that relative paths start
	// from.
	Workspace string
	// Target names the concrete place: a container ID, user@host:port, a host directory.
	Target       string
	Capabilities Capabilities
	Limits       Limits
	// Scratch are directories, as the environment sees them, that only this session's
	// commands use: the local backend's private temp dir, a container's own /tmp. The
	// approval classifier judges a write in one as a plain write; the rest of a shared /tmp
	// is outside the workspace like any other path.
	Scratch []string
	// TempDir is the value commands get in $TMPDIR when it is one of Scratch, "" when it is
	// not known to be.
	TempDir string
	// Notes explain degraded modes, e.g. why a resident helper is not in use.
	Notes []string
}

// Capabilities states the isolation an environment really provides, so that callers such as
// the approval gate can decide how much to trust a command's effects.
type Capabilities struct {
	// FilesystemIsolation: the command sees only the workspace and what was mounted, not the
	// host's filesystem.
	FilesystemIsolation bool
	// NetworkIsolation: the command has no network.
	NetworkIsolation bool
	// WritableHostMounts: some host directory is writable from inside.
	WritableHostMounts bool
	// ProcessTreeKill: a timeout or cancel kills every process the command started.
	ProcessTreeKill bool
	// ResidentHelper: a long-lived helper process starts commands (fast path).
	ResidentHelper bool
	// KernelSandbox: the kernel confines each command (Landlock and seccomp) to the
	// policy's write roots, read roots and network rules, so what a command does is held
	// where it runs and not only by a reading of its text.
	KernelSandbox bool
	// HidesDenyNames: the kernel sandbox also keeps the policy's deny_names files under the
	// roots, Airlock's own files and the credential stores unreadable, so a recursive read of
	// the workspace cannot reach a secret. A sandbox given only roots (the SSH helper's) does
	// not.
	HidesDenyNames bool
}

// Enforced reports whether something beyond a reading of the command text holds a command
// to the policy's roots: a container that sees only its mounts, or a kernel sandbox. Where
// it is false, only commands judged safe should run without a person.
func (c Capabilities) Enforced() bool { return c.FilesystemIsolation || c.KernelSandbox }

// Limits are the effective defaults and ceilings of an environment.
type Limits struct {
	DefaultTimeout time.Duration
	MaxOutputBytes int64
	MemoryBytes    int64
	PidsLimit      int64
	NanoCPUs       int64
}

// Sentinel errors that callers branch on.
var (
	// ErrClosed is returned by Exec after Close.
	ErrClosed = errors.New("environment closed")
	// ErrInvalidRequest marks a request no environment can run.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrOutsideWorkspace marks a working directory outside the workspace.
	ErrOutsideWorkspace = errors.New("outside workspace")
	// ErrUnavailable marks an environment that cannot be reached right now (daemon down,
	// connection lost); a retry may succeed.
	ErrUnavailable = errors.New("environment unavailable")
)

// Baseliner is implemented by environments that can time the raw alternative they stand
// in for — the docker CLI's exec, an OpenSSH multiplexed session — so that `airlock bench`
// gives its figures beside that alternative, timed in the same run on the same target.
type Baseliner interface {
	Baseline(ctx context.Context) (*Baseline, error)
}

// Baseline is one raw alternative to time.
type Baseline struct {
	// Name says what is timed, e.g. "docker exec CONTAINER true (CLI)".
	Name string
	// Run runs `true` the raw way once.
	Run func(ctx context.Context) error
	// Close releases what Baseline set up (an OpenSSH master connection).
	Close func()
	// Reset undoes, untimed, what the Runs since the last Reset made (the containers of a
	// start baseline); nil when Run leaves nothing.
	Reset func(ctx context.Context) error
}

// StartBaseliner is implemented by environments that can time the raw alternative to
// opening a session — for Docker, a container of the same spec created, started and given
// one command through the Engine API — for `airlock bench --session-start`. Its Baseline's
// Run starts one such sandbox and runs `true` in it; Run may be called concurrently.
type StartBaseliner interface {
	StartBaseline(ctx context.Context) (*Baseline, error)
}
