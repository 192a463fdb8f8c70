package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/backend/helper"
	"github.com/airlock-dev/airlock/backend/sandbox"
)

// SandboxConfig is how the local backend confines its commands (see package sandbox). The
// zero value is mode auto with the workspace as the only root.
type SandboxConfig struct {
	// Mode is auto (default: namespaces wherever the host can make them, else Landlock +
	// seccomp wherever the kernel has it), namespaces (required), landlock (Landlock +
	// seccomp required, no namespaces) or off.
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

// WithoutNamespaces plays a host that refuses the helper namespaces, for the reason why
// (tests of the fallback on a host that has them).
func WithoutNamespaces(why string) Option {
	return func(o *options) error {
		o.noNamespaces = why
		return nil
	}
}

// WithSandboxProbe replaces the kernel's Landlock probe (tests play a kernel without it).
func WithSandboxProbe(p sandbox.Probe) Option {
	return func(o *options) error {
		o.probe = p
		return nil
	}
}

// Isolation modes a local environment ends up in.
const (
	isolationNamespaces = "namespaces"
	isolationChild      = "child" // the fallback: a plain child process, Landlock + seccomp where the kernel has them
)

// missingWithoutNamespaces are the guarantees a helper without namespaces does not give,
// said in Describe, every result's notes and doctor.
var missingWithoutNamespaces = []string{
	"no mount namespace: the workspace root and every directory holding a protected path take no new entries (Landlock can only leave them out whole)",
	"no PID namespace: commands see the host's processes",
	"no network namespace: network none and allowlist rest on Landlock's TCP rules and seccomp alone",
	"no fresh /dev: /dev/tty is reachable where Landlock is missing",
}

// startHelper makes the session's private temp dir and starts the helper around it: in
// namespaces where the mode allows and the host can, otherwise as a plain child with
// Landlock + seccomp.
func (e *Env) startHelper(c SandboxConfig, probe sandbox.Probe) error {
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
	// A test's probe caps the ABI the helper may use: -1 means none.
	abi, maxABI := sandbox.KernelABI(), 0
	if probe != nil {
		abi, maxABI = probe(), -1
		if abi > 0 {
			maxABI = abi
		}
	}
	spec := helper.HelperSpec{Shell: e.cfg.Shell, TempDir: tmp, ReadRoots: read, WriteRoots: write,
		Network: c.Network, MaxABI: maxABI}
	if mode == sandbox.ModeAuto || mode == sandbox.ModeNamespaces {
		if started, err := e.startInNamespaces(spec, c, mode); started || err != nil {
			return err
		}
	}
	return e.startChild(spec, c, mode, abi)
}

// startInNamespaces starts the helper in its own namespaces. It reports false with no error
// when the host cannot make them and mode auto lets the helper run without (e.fallback
// says why).
func (e *Env) startInNamespaces(spec helper.HelperSpec, c SandboxConfig, mode sandbox.Mode) (bool, error) {
	home, _ := os.UserHomeDir()
	// The configured shell (and the programs beside it) stay reachable where a cover
	// would hide them. Only there: a root is also scanned for deny_names, and /usr/bin
	// (/bin/sh's) cost a cold start 1.5-8 ms to scan for nothing.
	nsRead := append(append([]string(nil), spec.ReadRoots...), e.egressDir...)
	if filepath.IsAbs(e.cfg.Shell) && sandbox.Covered(filepath.Dir(e.cfg.Shell)) {
		nsRead = append(nsRead, filepath.Dir(e.cfg.Shell))
	}
	ns := sandbox.PlanNamespace(sandbox.Policy{ReadRoots: nsRead, WriteRoots: spec.WriteRoots, TempDir: spec.TempDir,
		Home: home, Protected: c.Protected, Hidden: c.Hidden})
	ns.Network = e.noNetwork() || e.cfg.ServeCall != nil
	ns.User = os.Geteuid() != 0
	spec.Namespace, spec.Mode = &ns, sandbox.ModeAuto
	if e.cfg.ServeCall != nil {
		// The network namespace is the wall: commands reach the proxy through the
		// helper's relay on a port of the command's own, which Landlock cannot name in
		// advance.
		spec.Network = sandbox.Network{Unrestricted: true}
	}
	var h *helper.Helper
	err := fmt.Errorf("%w: %s", helper.ErrNamespace, e.noNamespaces)
	if e.noNamespaces == "" {
		h, err = helper.StartHelper(context.Background(), spec, e.log.Named("helper"))
	}
	if err != nil {
		if mode == sandbox.ModeNamespaces || !errors.Is(err, helper.ErrNamespace) {
			return false, namespaceRefusal(mode, err)
		}
		e.fallback = err.Error()
		e.log.Warn("helper without namespaces", "error", err)
		return false, nil
	}
	e.helper, e.isolation, e.namespace = h, isolationNamespaces, &ns
	e.hidesDenyNames = c.Hidden != nil && !ns.ScanCut
	e.writeRoots = ns.WriteRoots
	e.guards = []guarded{
		{ns.Masks, "protected (the configuration, the ledger or state, a deny_names match, a credential store or a system secret) and masked in the sandbox",
			"commands cannot read or change it; leave it alone, and ask the person if the task needs it"},
		{ns.ReadOnly, "a file git runs code from, read-only in the sandbox",
			"commands cannot change a repository's hooks or config; ask the person to make that change"},
	}
	return true, nil
}

// startChild starts the helper as a plain child: Landlock + seccomp carry the whole policy.
func (e *Env) startChild(spec helper.HelperSpec, c SandboxConfig, mode sandbox.Mode, abi int) error {
	if e.cfg.ServeCall != nil && e.cfg.Network != NetworkHost {
		return fmt.Errorf(`local: [network] mode = "allowlist" on this backend needs the helper's network namespace, and %s; use the docker backend, or mode "none" or "open"`, e.fallback)
	}
	spec.Mode = mode
	if mode == sandbox.ModeNamespaces {
		spec.Mode = sandbox.ModeAuto
	}
	if spec.Mode == sandbox.ModeLandlock {
		if why := sandbox.Unsupported(abi); why != "" {
			return fmt.Errorf("local: environment.local.sandbox: %w: sandbox = \"landlock\" is configured but %s; set sandbox = \"auto\" to run without kernel enforcement (then only commands judged safe run without a person), or \"off\"", sandbox.ErrUnsupported, why)
		}
	}
	hidden, complete := sandbox.FindHidden(append(append([]string(nil), spec.ReadRoots...), spec.WriteRoots...), c.Hidden)
	spec.Protected = append(append([]string(nil), c.Protected...), hidden...)
	h, err := helper.StartHelper(context.Background(), spec, e.log.Named("helper"))
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	e.helper, e.isolation = h, isolationChild
	e.hidesDenyNames = complete && e.enforced()
	return nil
}

// namespaceRefusal says why the helper could not start in namespaces and how to choose.
func namespaceRefusal(mode sandbox.Mode, err error) error {
	if mode != sandbox.ModeNamespaces {
		return fmt.Errorf("local: start the helper: %w", err)
	}
	return fmt.Errorf(`local: environment.local.sandbox = "namespaces" is configured but the helper could not get them (%w); `+
		`run as root, allow unprivileged user namespaces (sysctl user.max_user_namespaces > 0, kernel.unprivileged_userns_clone = 1, `+
		`or an AppArmor profile that permits them), use the docker backend, or set sandbox = "auto" to run with Landlock + seccomp only, `+
		`without: %s`, err, strings.Join(missingWithoutNamespaces, "; "))
}

// summary is the one-line note every result carries.
func (e *Env) summary() string {
	enforced, notes := e.helper.Client.Sandbox()
	switch {
	case e.isolation == isolationNamespaces:
		return "sandbox: resident helper in its own namespaces (host read-only; writes only in the write roots and the session temp dir; protected paths masked; no capabilities), Landlock + seccomp on top where the kernel has them; see Describe"
	case enforced:
		s := "sandbox: Landlock + seccomp in a helper without namespaces (" + e.fallback + "); missing: " + strings.Join(missingWithoutNamespaces, "; ")
		if e.fallback == "" {
			s = "sandbox: Landlock + seccomp in a helper without namespaces (sandbox = \"" + string(e.cfg.Sandbox.Mode) + "\"); missing: " + strings.Join(missingWithoutNamespaces, "; ")
		}
		return s
	case len(notes) > 0:
		return notes[0]
	}
	return "sandbox: not enforced"
}

// sandboxNotes are the Describe notes about enforcement.
func (e *Env) sandboxNotes() []string {
	enforced, n := e.helper.Client.Sandbox()
	if e.isolation == isolationChild {
		why := e.fallback
		if why == "" {
			why = "sandbox = \"" + string(e.cfg.Sandbox.Mode) + "\""
		}
		n = append(n, "sandbox: the helper has no namespaces ("+why+"); missing: "+strings.Join(missingWithoutNamespaces, "; "))
	}
	if !enforced {
		n = append(n, "commands run on the host: no filesystem or network isolation")
	}
	return n
}

// enforced reports whether the helper confines commands at all.
func (e *Env) enforced() bool {
	enforced, _ := e.helper.Client.Sandbox()
	return enforced
}

// TempDir is the session's private scratch directory; commands get it as TMPDIR.
func (e *Env) TempDir() string { return e.tempDir }

// Isolation says how the helper is isolated: "namespaces", or "child" (no namespaces).
func (e *Env) Isolation() string { return e.isolation }

// HelperPID is the helper's process ID on the host.
func (e *Env) HelperPID() int { return e.helper.PID() }

// HelperStderr is what the helper said on stderr (for diagnostics).
func (e *Env) HelperStderr() string { return e.helper.Stderr() }
