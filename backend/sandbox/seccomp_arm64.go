package sandbox

import "golang.org/x/sys/unix"

const (
	auditArch     = unix.AUDIT_ARCH_AARCH64
	x32Bit        = 0
	cloneFlagsArg = 0
)

var archDenied = []uintptr{}
