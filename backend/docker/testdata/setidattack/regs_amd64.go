package main

import (
	"syscall"

	"golang.org/x/sys/unix"
)

func isFchmodat(r *syscall.PtraceRegs) bool { return r.Orig_rax == unix.SYS_FCHMODAT }

// setModeArg sets fchmodat's third argument, the mode.
func setModeArg(r *syscall.PtraceRegs, mode uint64) { r.Rdx = mode }
