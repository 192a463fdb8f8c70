// Package sandbox confines the commands a backend starts with the kernel's Landlock LSM and a
// seccomp filter, so that the path policy holds where commands run and not only in a reading
// of their text.
//
// It is a mechanism shared by backends (like [procgroup]), not a backend. A [Sandbox] is built
// once from a [Policy] — the roots a command may read and write, the files it must never reach
// (the configuration, the ledger, credential directories, deny_names matches), the TCP ports it
// may use — and then [Sandbox.Do] runs a function on an OS thread that carries the
// restrictions: no_new_privs, dropped capabilities, a Landlock domain of its own and the
// seccomp filter. A process forked from that thread inherits them and keeps them across exec.
// Only worker goroutines locked to such threads for good ever run there (the runtime ends the
// thread when its worker returns), so the process that calls Do — Airlock, or the resident
// helper — stays unconfined. Landlock's scoping (ABI 6) then keeps a command from signalling
// or ptracing anything outside its domain, and with no capabilities and Airlock non-dumpable
// it cannot read Airlock's /proc entries either. The worker thread shares the command's
// domain, so scoping does not protect it: the filter closes every way to signal it or its
// process by number (kill, tkill, tgkill, rt_*sigqueueinfo, pidfd_open, a SIGIO owner set
// with F_SETOWN), refuses the ways whose target it cannot read (pidfd_send_signal on a pidfd
// made by opening /proc/TID, F_SETOWN_EX, FIOSETOWN), and refuses new resource limits on
// other processes (a CPU limit is a SIGKILL sent later).
//
// The filter is the second wall: it closes what Landlock does not see (see [buildFilter]):
// TCP Fast Open and listen() without bind, socket families other than unix, internet and
// NETLINK_ROUTE, terminal input injection, SysV IPC unless commands have an IPC namespace of
// their own. Capabilities are all dropped, so even a root command changes the metadata of
// only the files it owns.
//
// Landlock is an allow-list: access is granted to directory hierarchies, never taken away
// beneath them. A protected path is therefore kept out by never granting any directory above
// it: where one lies beneath an allowed root, that root is split — the directory holding it
// gets only the right to list names, its other entries get the root's rights (see [plan]).
// The price: nothing new can be created directly in such a directory, and a protected path
// that appears after the sandbox was built is only kept out if it lies outside every root.
//
// Go cannot run code between fork and exec, which is why the restrictions are put on a
// locked OS thread rather than applied in the child: the Go runtime starts new threads from
// a clean template thread when asked to from a locked one, so nothing else inherits them.
// Restricting a thread costs a few hundred microseconds, so restricted threads are reused:
// commands running at the same time are on different workers and in different domains.
// [Sandbox.Hold] runs only a command's start there and keeps the worker held for the command
// until it has ended, so that the caller waits for it on its own goroutine (a goroutine
// locked to a thread pays a hand-over of the thread each time it blocks and wakes).
// [Sandbox.Go] instead gives the worker a whole job that the caller does not wait for — the
// helper's "start, wait in one poll(2), answer" — which costs one hand-over where Hold costs
// two; what must not run in the command's domain (killing another command's escapees) the
// job hands on itself (procgroup.Spec.Restricted).
//
// [procgroup]: github.com/airlock-dev/airlock/backend/procgroup
package sandbox
