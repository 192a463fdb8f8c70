//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter is written with golang.org/x/sys/unix's BPF types rather than a filter
// library. It is a deny list plus a handful of argument checks, small enough to read whole
// beside the kernel's own documentation. libseccomp-golang would make the build need cgo and
// a C library on every host the helper is copied to (the helper is a static binary);
// elastic/go-seccomp-bpf is pure Go but compiles policies from names, cannot express the
// per-thread pid and tid checks below, and would be a second way of saying what this file
// says. The rules are data (the lists and the [filterSpec]); the code only lays them out.

// deniedSyscalls are refused with EPERM on every architecture: calls that reach other
// processes' memory or descriptors (ptrace, process_vm_*, pidfd_getfd, process_madvise),
// change what the filesystem is (mount and the new mount API, pivot_root, chroot), reach the
// kernel keyring, load code into the kernel (bpf, modules, kexec), observe the system (perf),
// enter or make namespaces, and io_uring, whose operations bypass this filter.
var deniedSyscalls = append([]uintptr{
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_PIDFD_GETFD, unix.SYS_PROCESS_MADVISE,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
	unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG,
	unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_USERFAULTFD, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_ACCT,
	unix.SYS_SYSLOG,
}, archDenied...)

// absentSyscalls fail with ENOSYS, as on a kernel without them, so that libc and language
// runtimes fall back to a call the filter can check. clone3 passes its flags in memory the
// filter cannot read (the fallback is clone, whose flags are checked); pidfd_send_signal
// aims at whatever process a descriptor names — opening /proc/TID of the thread a command
// was started from gives one — so it is refused whole (Go's os package probes it and falls
// back to kill, whose target is checked).
var absentSyscalls = []uintptr{unix.SYS_CLONE3, unix.SYS_PIDFD_SEND_SIGNAL}

// ipcSyscalls reach SysV shared memory, semaphores and message queues and POSIX message
// queues, which are named by numbers or names any process of the same user can use: a
// command could write the memory of a host process. They are refused unless each command
// has an IPC namespace of its own ([Policy.PrivateIPC]).
var ipcSyscalls = []uintptr{
	unix.SYS_SHMGET, unix.SYS_SHMAT, unix.SYS_SHMCTL,
	unix.SYS_MSGGET, unix.SYS_MSGSND, unix.SYS_MSGRCV, unix.SYS_MSGCTL,
	unix.SYS_SEMGET, unix.SYS_SEMOP, unix.SYS_SEMTIMEDOP, unix.SYS_SEMCTL,
	unix.SYS_MQ_OPEN, unix.SYS_MQ_UNLINK, unix.SYS_MQ_TIMEDSEND, unix.SYS_MQ_TIMEDRECEIVE,
	unix.SYS_MQ_NOTIFY, unix.SYS_MQ_GETSETATTR,
}

// signalSyscalls name their target by number in their first argument: a pid, a tid, a
// process group (negative), or a tgid (tgkill, rt_tgsigqueueinfo).
var signalSyscalls = []uintptr{unix.SYS_KILL, unix.SYS_TKILL, unix.SYS_TGKILL, unix.SYS_RT_SIGQUEUEINFO, unix.SYS_RT_TGSIGQUEUEINFO, unix.SYS_PIDFD_OPEN}

// deniedIoctls are refused on any descriptor: TIOCSTI pushes input into a terminal (a
// command line the person's shell then runs), TIOCLINUX does the same and more on a
// virtual console, TIOCCONS redirects the console; FIOSETOWN and SIOCSPGRP pick which
// process gets a descriptor's SIGIO and SIGURG by a pointer the filter cannot read.
var deniedIoctls = []uint32{unix.TIOCSTI, unix.TIOCLINUX, unix.TIOCCONS, fioSetOwn, unix.SIOCSPGRP}

// fioSetOwn is FIOSETOWN, which golang.org/x/sys/unix does not name.
const fioSetOwn = 0x8901

// msgFastOpen and tcpFastOpenConnect make a TCP connection without connect(2), which is the
// call Landlock checks (older kernels let a Fast Open sendto through).
const (
	msgFastOpen        = unix.MSG_FASTOPEN
	tcpFastOpenConnect = unix.TCP_FASTOPEN_CONNECT
)

// filterSpec is what one filter is built from.
type filterSpec struct {
	Network Network
	// DenyUnix refuses unix sockets: below Landlock ABI 9 a connect to a pathname socket
	// (the Docker daemon's, an ssh-agent's) is not something Landlock sees.
	DenyUnix bool
	// PrivateIPC leaves SysV IPC and POSIX message queues alone (see [ipcSyscalls]).
	PrivateIPC bool
	// PID and TID are the process that starts the command and the thread it is started
	// from: that thread shares the command's Landlock domain (the command inherits it), so
	// scoping alone would let the command signal it by its thread ID — and a signal to one
	// thread is a signal to the whole process. Every call that aims a signal, a pidfd or a
	// SIGIO owner at either is refused; zero leaves the checks out.
	PID, TID int
}

// nsFlags are the clone flags that make new namespaces.
const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | 0x80 /* CLONE_NEWTIME */

const (
	retAllow  = unix.SECCOMP_RET_ALLOW
	retKill   = unix.SECCOMP_RET_KILL_PROCESS
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// offsets in struct seccomp_data.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16 // args[i] at 16+8*i; the low 32 bits first on little-endian machines
)

// bpfProgram is a filter under construction with forward jumps to named labels.
type bpfProgram struct {
	ins    []unix.SockFilter
	labels map[string]int
	fixups []fixup
}

type fixup struct {
	at           int
	jt, jf       string
	jtSet, jfSet bool
}

func (p *bpfProgram) stmt(code uint16, k uint32) {
	p.ins = append(p.ins, unix.SockFilter{Code: code, K: k})
}

// jump adds a conditional jump; "" means the next instruction.
func (p *bpfProgram) jump(code uint16, k uint32, jt, jf string) {
	p.fixups = append(p.fixups, fixup{at: len(p.ins), jt: jt, jf: jf, jtSet: jt != "", jfSet: jf != ""})
	p.ins = append(p.ins, unix.SockFilter{Code: code, K: k})
}

func (p *bpfProgram) label(name string) { p.labels[name] = len(p.ins) }

// jeq jumps to the label when the loaded word equals k.
func (p *bpfProgram) jeq(k uint32, to string) {
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, k, to, "")
}

func (p *bpfProgram) load(off uint32) { p.stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, off) }
func (p *bpfProgram) ret(v uint32)    { p.stmt(unix.BPF_RET|unix.BPF_K, v) }

func (p *bpfProgram) link() ([]unix.SockFilter, error) {
	for _, f := range p.fixups {
		for _, j := range []struct {
			name string
			set  bool
			dst  *uint8
		}{{f.jt, f.jtSet, &p.ins[f.at].Jt}, {f.jf, f.jfSet, &p.ins[f.at].Jf}} {
			if !j.set {
				continue
			}
			to, ok := p.labels[j.name]
			if !ok {
				return nil, fmt.Errorf("seccomp: no label %q", j.name)
			}
			d := to - f.at - 1
			if d < 0 || d > 255 {
				return nil, fmt.Errorf("seccomp: jump to %q out of range (%d)", j.name, d)
			}
			*j.dst = uint8(d)
		}
	}
	return p.ins, nil
}

// buildFilter returns the filter for spec: the deny lists above, and these checks on
// arguments:
//   - clone: no namespace flags;
//   - signals (kill, tkill, tgkill, rt_*sigqueueinfo, pidfd_open) and fcntl F_SETOWN: not at
//     spec.PID, -spec.PID or spec.TID; F_SETOWN_EX, whose target is behind a pointer, never;
//   - prlimit64: a new limit only for the caller itself (pid 0) — a CPU limit set on
//     another process is a SIGKILL sent later;
//   - ioctl: none of [deniedIoctls];
//   - socket: unix (unless spec.DenyUnix), internet, and netlink's NETLINK_ROUTE only —
//     the family glibc's getaddrinfo and getifaddrs use to list addresses and routes, which
//     without capabilities can only be read; every other netlink family (sock_diag lists
//     every socket of the host, uevents, audit, generic netlink's taskstats), vsock, packet
//     and the rest are refused;
//   - with the network restricted: internet sockets only for TCP (protocol 0 or TCP, not
//     MPTCP or SCTP, which Landlock does not see), and none at all when no TCP port is
//     granted; no Fast Open (MSG_FASTOPEN on sendto, sendmsg and sendmmsg, and the
//     TCP_FASTOPEN_CONNECT option); no listen() when no port may be bound, since listen()
//     on an unbound socket binds a free port on every address without the bind(2) Landlock
//     checks (seccomp cannot see whether a socket is bound, or its family: with unix sockets
//     allowed, from Landlock ABI 9, unix listeners are refused with them).
func buildFilter(spec filterSpec) ([]unix.SockFilter, error) {
	p := &bpfProgram{labels: map[string]int{}}
	jeq := p.jeq
	p.load(offArch)
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, auditArch, "arch_ok", "")
	p.ret(retKill) // another ABI (i386 through int 0x80 on x86-64) would bypass the numbers below
	p.label("arch_ok")
	p.load(offNr)
	if x32Bit != 0 {
		p.jump(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K, x32Bit, "eperm", "")
	}
	for _, nr := range deniedSyscalls {
		jeq(uint32(nr), "eperm")
	}
	for _, nr := range absentSyscalls {
		jeq(uint32(nr), "enosys")
	}
	if !spec.PrivateIPC {
		for _, nr := range ipcSyscalls {
			jeq(uint32(nr), "eperm")
		}
	}
	if spec.PID > 0 {
		for _, nr := range signalSyscalls {
			jeq(uint32(nr), "signal")
		}
	}
	restricted := !spec.Network.Unrestricted
	for _, c := range []struct {
		nr    uintptr
		label string
		when  bool
	}{
		{unix.SYS_CLONE, "clone", true},
		{unix.SYS_SOCKET, "socket", true},
		{unix.SYS_IOCTL, "ioctl", true},
		{unix.SYS_FCNTL, "fcntl", true},
		{unix.SYS_PRLIMIT64, "prlimit", true},
		{unix.SYS_SENDTO, "send_flags3", restricted},
		{unix.SYS_SENDMMSG, "send_flags3", restricted},
		{unix.SYS_SENDMSG, "send_flags2", restricted},
		{unix.SYS_SETSOCKOPT, "setsockopt", restricted},
		{unix.SYS_LISTEN, "eperm", restricted && len(spec.Network.BindTCP) == 0},
	} {
		if c.when {
			jeq(uint32(c.nr), c.label)
		}
	}
	p.ret(retAllow)

	processChecks(p, spec)
	socketChecks(p, spec)
	p.label("allow")
	p.ret(retAllow)
	p.label("eperm")
	p.ret(retEPERM)
	p.label("enosys")
	p.ret(retENOSYS)
	return p.link()
}

// processChecks are the argument checks of the calls that reach other processes, the
// terminal, and new namespaces.
func processChecks(p *bpfProgram, spec filterSpec) {
	jeq := p.jeq
	if spec.PID > 0 {
		p.label("signal")
		p.load(offArgs + 0) // the target: a pid, a tid, a process group, or a tgid
		guardTargets(p, spec)
	}

	p.label("clone")
	p.load(offArgs + 8*cloneFlagsArg)
	p.jump(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K, nsFlags, "eperm", "")
	p.ret(retAllow)

	p.label("ioctl")
	p.load(offArgs + 8) // the request
	for _, req := range deniedIoctls {
		jeq(req, "eperm")
	}
	p.ret(retAllow)

	p.label("fcntl")
	p.load(offArgs + 8) // the command
	jeq(unix.F_SETOWN_EX, "eperm")
	if spec.PID > 0 {
		p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.F_SETOWN, "", "allow")
		p.load(offArgs + 16) // the owner: a pid, or a process group when negative
		guardTargets(p, spec)
	}
	p.ret(retAllow)

	p.label("prlimit")
	p.load(offArgs + 0) // pid: 0 is the caller
	jeq(0, "allow")
	p.load(offArgs + 16) // new_limit: NULL only reads
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, 0, "", "eperm")
	p.load(offArgs + 16 + 4)
	jeq(0, "allow")
	p.ret(retEPERM)
}

// socketChecks are the argument checks of the socket calls.
func socketChecks(p *bpfProgram, spec filterSpec) {
	jeq := p.jeq
	restricted := !spec.Network.Unrestricted
	p.label("socket")
	p.load(offArgs + 0) // domain
	if spec.DenyUnix {
		jeq(unix.AF_UNIX, "eperm")
	} else {
		jeq(unix.AF_UNIX, "allow")
	}
	jeq(unix.AF_NETLINK, "netlink")
	jeq(unix.AF_INET, "inet")
	jeq(unix.AF_INET6, "inet")
	p.ret(retEPERM)
	p.label("netlink")
	p.load(offArgs + 16) // protocol
	jeq(unix.NETLINK_ROUTE, "allow")
	p.ret(retEPERM)
	p.label("inet")
	switch {
	case !restricted:
		p.ret(retAllow)
	case len(spec.Network.ConnectTCP)+len(spec.Network.BindTCP) == 0:
		p.ret(retEPERM) // no TCP port is granted: an internet socket can only be misused
	default:
		// Landlock governs TCP connect and bind; every other kind of internet socket (UDP,
		// raw, MPTCP, SCTP, which Landlock does not see) is refused.
		p.load(offArgs + 8) // type, with SOCK_NONBLOCK and SOCK_CLOEXEC
		p.stmt(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, 0xf)
		p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SOCK_STREAM, "", "eperm")
		p.load(offArgs + 16) // protocol
		jeq(0, "allow")
		jeq(unix.IPPROTO_TCP, "allow")
		p.ret(retEPERM)
	}

	if restricted {
		p.label("send_flags3")
		p.load(offArgs + 24)
		p.jump(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K, msgFastOpen, "eperm", "allow")
		p.label("send_flags2")
		p.load(offArgs + 16)
		p.jump(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K, msgFastOpen, "eperm", "allow")
		p.label("setsockopt")
		p.load(offArgs + 8) // level
		p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.IPPROTO_TCP, "", "allow")
		p.load(offArgs + 16) // option
		jeq(tcpFastOpenConnect, "eperm")
		p.ret(retAllow)
	}
}

// guardTargets refuses the loaded target when it is the guarded process, its process group
// or the guarded thread, and allows it otherwise.
func guardTargets(p *bpfProgram, spec filterSpec) {
	for _, v := range []int{spec.PID, spec.TID, -spec.PID} {
		p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, uint32(int32(v)), "eperm", "")
	}
	p.ret(retAllow)
}

// secondWallNotes say what the filter, the dropped capabilities and procgroup hold beyond
// Landlock, and what this mode leaves open.
func secondWallNotes(p Policy) []string {
	notes := []string{"sandbox: seccomp: no TCP Fast Open or listen() without a granted bind; no vsock, packet or netlink sockets but NETLINK_ROUTE; no TIOCSTI or TIOCLINUX; no pidfd_send_signal, SIGIO owner or prlimit aimed at another process; no capabilities; each command in a session of its own with no terminal and only its standard streams"}
	if !p.PrivateIPC {
		notes = append(notes, "sandbox: SysV IPC and POSIX message queues refused (commands have no IPC namespace of their own in this mode)")
	}
	if p.HostReadOnly {
		return notes
	}
	owner := "the user's own files"
	if os.Geteuid() == 0 {
		owner = "the user's own files (Airlock runs as root: every root-owned file)"
	}
	return append(notes, "sandbox: not enforced in this mode: chmod, utime and user xattrs on "+owner+" outside the roots (Landlock does not govern metadata; the namespace sandbox's read-only mounts do)")
}

// installFilter puts the filter on the calling thread only (no TSYNC). no_new_privs must be
// set on the thread already.
//
// It passes SECCOMP_FILTER_FLAG_SPEC_ALLOW, as runc and crun do by default.
// Without it, on kernels before 5.16 and wherever spec_store_bypass_disable or
// spectre_v2_user is "seccomp", installing a filter force-disables speculative store bypass
// and indirect branch speculation for the thread and everything it starts: the restricted
// threads that read requests and fork, and every command. That costs an IBPB at each switch
// between them and any other process, and slows the commands' own code (Docker users saw
// Python and Ruby take twice as long). Those mitigations keep code from reading its own
// process's memory through speculation, or another task from steering its branches; a
// command can read its own memory anyway, and Airlock and the helper are other processes,
// as on kernels since 5.16, where the default no longer ties the mitigations to seccomp
// (commit 2f46993d83ff, which gives the same reasons).
func installFilter(ins []unix.SockFilter) error {
	prog := unix.SockFprog{Len: uint16(len(ins)), Filter: &ins[0]}
	_, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_SPEC_ALLOW, uintptr(unsafe.Pointer(&prog)))
	if e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	return nil
}
