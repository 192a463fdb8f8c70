package sandbox

import "golang.org/x/sys/unix"

const (
	auditArch = unix.AUDIT_ARCH_X86_64
	// x32Bit marks the x32 ABI's syscall numbers, which would bypass a list of x86-64 ones.
	x32Bit = 0x40000000
	// cloneFlagsArg is clone's argument that holds the flags.
	cloneFlagsArg = 0
)

var archDenied = []uintptr{unix.SYS_IOPL, unix.SYS_IOPERM}
