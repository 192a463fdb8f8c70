package main

import "golang.org/x/sys/unix"

// Airlock is not dumpable from its first instruction on: its /proc entries (environ, mem,
// fd, maps) then belong to root and need CAP_SYS_PTRACE, which sandboxed commands never
// have; Landlock's scoping keeps them from Airlock's process as well. A command gets its own
// dumpable state back when it execs. Failing to set it is not fatal (nothing else depends
// on it) but is reported by `airlock doctor`.
func init() { dumpableErr = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }

var dumpableErr error
