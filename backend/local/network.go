package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/procgroup"
)

// NetworkConfig is what the runtime passes, among a record's Options, for [network]: the
// mode (NetworkHost or NetworkNone), variables every command gets (the egress proxy's), and
// what to stop at Close.
type NetworkConfig struct {
	Mode    string
	Env     map[string]string
	OnClose func() error
	// Attribute is the proxy's hook for naming the call behind a connection (see
	// [Config.Attribute]).
	Attribute func(backend.ConnOwner)
}

// Network modes of the local backend.
const (
	NetworkHost = "host"
	NetworkNone = "none"
)

// netnsFlags returns how to give a command a network namespace of its own — the kernel
// makes it empty: no interface but a loopback that is down, so nothing, not even the host's
// loopback services, is reachable. As root (CAP_SYS_ADMIN) that is CLONE_NEWNET alone;
// otherwise an unprivileged user namespace is made around it, with the caller's own uid and
// gid mapped to themselves so files keep their owners.
func netnsIsolation() func(*syscall.SysProcAttr) {
	if os.Geteuid() == 0 {
		return func(a *syscall.SysProcAttr) { a.Cloneflags |= syscall.CLONE_NEWNET }
	}
	uid, gid := os.Getuid(), os.Getgid()
	return func(a *syscall.SysProcAttr) {
		a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
	}
}

// probeNetworkNone checks, once at New, that this host can start a process in a fresh
// network namespace; the error says why not, so that the backend refuses rather than run
// with the host's network.
func probeNetworkNone(shell string) error {
	// Through procgroup, so that a subreaper's zombie sweep does not take the child's exit
	// status from us.
	out, err := procgroup.Run(context.Background(), procgroup.Spec{
		Path: shell, Args: []string{shell, "-c", "exit 0"}, Timeout: 10 * time.Second,
		Stdout: io.Discard, Stderr: io.Discard, Isolate: netnsIsolation(),
	})
	if err == nil && out.ExitCode != 0 {
		err = fmt.Errorf("a probe in a fresh network namespace exited %d", out.ExitCode)
	}
	if err != nil {
		why := err.Error()
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) {
			why += " (needs root, or unprivileged user namespaces: sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces > 0)"
		}
		return fmt.Errorf(`local: [network] mode = "none" needs a fresh network namespace for each command, and this host refused one: %s; run as root, enable user namespaces, use the docker backend, or set [network] mode = "open"`, why)
	}
	return nil
}
