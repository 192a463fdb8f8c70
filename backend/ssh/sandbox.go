package ssh

import (
	"fmt"
	"path"
	"strings"
)

// The kernel sandbox on the remote host is applied by the resident helper: it is started
// with the policy's read and write roots placed in the remote workspace (the workspace
// itself when [policy] names none; plus what programs need), and confines every command it
// starts (see package sandbox). In session mode there is no
// helper and nothing is enforced; with sandbox = "landlock" that is a refusal.

// Sandbox modes of [Config.Sandbox].
const (
	SandboxAuto     = "auto"
	SandboxLandlock = "landlock"
	SandboxOff      = "off"
)

// sandboxArgs are the helper's flags for a remote workspace and the policy's roots in it;
// proxyPort, when not 0, is the one TCP port commands may connect to (the reverse-forwarded
// egress proxy).
func (c Config) sandboxArgs(workspace string, r roots, proxyPort int) string {
	mode := c.Sandbox
	if mode == "" {
		mode = SandboxAuto
	}
	if mode == SandboxOff {
		return " --sandbox off"
	}
	write, read := r.write, r.read
	if len(write) == 0 {
		write = []string{"."}
	}
	if len(read) == 0 {
		read = []string{"."}
	}
	args := " --sandbox " + mode
	for _, w := range write {
		args += " --sandbox-write " + quote(place(workspace, w))
	}
	for _, rd := range read {
		args += " --sandbox-read " + quote(place(workspace, rd))
	}
	if proxyPort != 0 {
		args += fmt.Sprintf(" --sandbox-connect %d", proxyPort)
	}
	return args
}

// place puts a root as [policy] names it in the remote workspace: a relative one beneath
// it, an absolute one as it is.
func place(workspace, root string) string {
	if path.IsAbs(root) {
		return path.Clean(root)
	}
	return path.Join(workspace, root)
}

// checkSandbox decides, once connected, whether the configured sandbox is delivered: mode
// landlock without an enforcing helper is an error that says why and how to choose.
func (e *Env) checkSandbox(l *link, helperErr error) (enforced bool, notes []string, err error) {
	mode := e.cfg.Sandbox
	if mode == "" {
		mode = SandboxAuto
	}
	if mode == SandboxOff {
		return false, []string{"sandbox: not enforced (sandbox = \"off\"): only commands judged safe run without a person"}, nil
	}
	if l.helper == nil {
		why := "session mode (mode = \"session\")"
		if helperErr != nil {
			why = "the resident helper is not in use: " + helperErr.Error()
		}
		if mode == SandboxLandlock {
			return false, nil, fmt.Errorf("ssh: environment.ssh.sandbox = \"landlock\" cannot be delivered on %s: %s; set sandbox = \"auto\" to run without kernel enforcement (then only commands judged safe run without a person), or \"off\"", e.cfg.target(), why)
		}
		return false, []string{"sandbox: not enforced on " + e.cfg.target() + " (" + why + "): only commands judged safe run without a person"}, nil
	}
	enforced, notes = l.helper.client.Sandbox()
	if !enforced && mode == SandboxLandlock {
		return false, nil, fmt.Errorf("ssh: environment.ssh.sandbox = \"landlock\" cannot be delivered on %s: %s", e.cfg.target(), strings.Join(notes, "; "))
	}
	return enforced, notes, nil
}
