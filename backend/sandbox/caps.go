//go:build linux

package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// droppedCaps are the capabilities a command never gets, even when it runs as root: with
// them a root command could read other processes' memory and environment (CAP_SYS_PTRACE
// passes by the dumpable flag), administer the system, talk raw to devices and the network,
// or read files by handle. The file capabilities a root user needs to work on its own tree
// (CAP_DAC_OVERRIDE, CAP_CHOWN, CAP_FOWNER, CAP_SETUID…) are kept; Landlock bounds where
// they apply.
var droppedCaps = []uintptr{
	unix.CAP_SYS_PTRACE, unix.CAP_SYS_ADMIN, unix.CAP_SYS_MODULE, unix.CAP_SYS_RAWIO,
	unix.CAP_SYS_BOOT, unix.CAP_SYS_TIME, unix.CAP_SYS_RESOURCE, unix.CAP_SYS_NICE,
	unix.CAP_NET_ADMIN, unix.CAP_NET_RAW, unix.CAP_MKNOD, unix.CAP_MAC_ADMIN,
	unix.CAP_MAC_OVERRIDE, unix.CAP_AUDIT_CONTROL, unix.CAP_AUDIT_READ, unix.CAP_SYSLOG,
	unix.CAP_BPF, unix.CAP_PERFMON, unix.CAP_CHECKPOINT_RESTORE, unix.CAP_DAC_READ_SEARCH,
	unix.CAP_KILL, unix.CAP_LINUX_IMMUTABLE, unix.CAP_IPC_OWNER, unix.CAP_SYS_PACCT,
	unix.CAP_WAKE_ALARM, unix.CAP_BLOCK_SUSPEND, unix.CAP_SYS_TTY_CONFIG, unix.CAP_LEASE,
}

// dropCaps removes droppedCaps from the calling thread's bounding, effective, permitted,
// inheritable and ambient sets. Capabilities are per thread, so only what this thread
// starts is affected.
func dropCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("sandbox: capget: %w", err)
	}
	if data[0].Permitted == 0 && data[1].Permitted == 0 && data[0].Effective == 0 && data[1].Effective == 0 {
		// An unprivileged user holds none, and with no_new_privs an exec cannot grant any.
		return nil
	}
	for _, c := range droppedCaps {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("sandbox: drop capability %d from the bounding set: %w", c, err)
		}
	}
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	for _, c := range droppedCaps {
		i, bit := c/32, uint32(1)<<(c%32)
		data[i].Effective &^= bit
		data[i].Permitted &^= bit
		data[i].Inheritable &^= bit
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("sandbox: capset: %w", err)
	}
	return nil
}
