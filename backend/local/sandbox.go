package local

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlock-dev/airlock/backend/sandbox"
)

// SandboxConfig is how the local backend confines its commands with the kernel (see package
// sandbox). The zero value is mode auto with the workspace as the only root.
type SandboxConfig struct {
	// Mode is auto (default: on wherever the kernel supports it), landlock (required) or off.
	Mode sandbox.Mode
	// ReadRoots and WriteRoots are absolute host paths; empty means the workspace.
	ReadRoots  []string
	WriteRoots []string
	// Protected are paths no command may read or write: the configuration in use, the
	// ledger, the session state.
	Protected []string
	// Hidden reports deny_names matches (a path relative to a root, slash-separated).
	Hidden func(rel string) bool
	// Network is the TCP access commands get (none by default).
	Network sandbox.Network
}

// WithSandboxProbe replaces the kernel's Landlock probe (tests play a kernel without it).
func WithSandboxProbe(p sandbox.Probe) Option {
	return func(o *options) error {
		o.probe = p
		return nil
	}
}

// openSandbox makes the session's private temp dir and builds the sandbox around it.
func (e *Env) openSandbox(c SandboxConfig, probe sandbox.Probe) error {
	tmp, err := os.MkdirTemp("", "airlock-session-")
	if err != nil {
		return fmt.Errorf("local: session temp dir: %w", err)
	}
	if tmp, err = filepath.EvalSymlinks(tmp); err != nil {
		return fmt.Errorf("local: session temp dir: %w", err)
	}
	e.tempDir = tmp
	mode := c.Mode
	if mode == "" {
		mode = sandbox.ModeAuto
	}
	read, write := c.ReadRoots, c.WriteRoots
	if len(read) == 0 {
		read = []string{e.workspace}
	}
	if len(write) == 0 {
		write = []string{e.workspace}
	}
	var opts []sandbox.Option
	if probe != nil {
		opts = append(opts, sandbox.WithProbe(probe))
	}
	sb, err := sandbox.New(mode, sandbox.Policy{
		ReadRoots:  read,
		WriteRoots: write,
		TempDir:    tmp,
		Protected:  c.Protected,
		Hidden:     c.Hidden,
		Network:    c.Network,
	}, opts...)
	if err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("local: environment.local.sandbox: %w", err)
	}
	e.sandbox = sb
	e.sandboxNote = summary(sb)
	return nil
}

// summary is the one-line note every result carries.
func summary(sb *sandbox.Sandbox) string {
	if !sb.Enforced() {
		return sb.Notes()[0]
	}
	return fmt.Sprintf("sandbox: Landlock ABI %d + seccomp enforced (writes only in the write roots and the session temp dir; no network; see Describe)", sb.ABI())
}

// sandboxNotes are the Describe notes about enforcement.
func (e *Env) sandboxNotes() []string {
	n := e.sandbox.Notes()
	if e.sandbox.Enforced() {
		return n
	}
	return append(n, "commands run on the host: no filesystem or network isolation")
}

// Sandbox reports the kernel sandbox in force (never nil once New succeeded).
func (e *Env) Sandbox() *sandbox.Sandbox { return e.sandbox }

// TempDir is the session's private scratch directory; commands get it as TMPDIR.
func (e *Env) TempDir() string { return e.tempDir }
