//go:build linux

package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter is written with golang.org/x/sys/unix's BPF types rather than a filter
// library: it is one fixed deny list plus two argument checks, small enough to read whole,
// and a library (libseccomp-golang) would make the build need cgo and a C library on every
// host the helper runs on.

// deniedSyscalls are refused with EPERM on every architecture: calls that reach other
// processes' memory (ptrace, process_vm_*), change what the filesystem is (mount and the
// new mount API, pivot_root, chroot), reach the kernel keyring, load code into the kernel
// (bpf, modules, kexec), observe the system (perf), enter or make namespaces, and io_uring,
// whose operations bypass this filter.
var deniedSyscalls = append([]uintptr{
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
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

// nsFlags are the clone flags that make new namespaces.
const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | 0x80 /* CLONE_NEWTIME */

const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	// clone3 passes its flags in memory the filter cannot read: it fails as if the kernel
	// lacked it, and libc and the Go runtime fall back to clone, whose flags are checked.
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

// buildFilter returns the filter for the network policy n. With denyUnix, sockets of the
// unix family are refused too: below Landlock ABI 9 a connect to a pathname socket (the
// Docker daemon's, an ssh-agent's) is not something Landlock sees.
//
// pid and tid are the process that starts the command and the thread it is started from:
// that thread shares the command's Landlock domain (the command inherits it), so scoping
// alone would let the command signal it by its thread ID — and a signal to one thread is a
// signal to the whole process. Every call that aims a signal (or a pidfd) at either is
// refused; zero leaves the check out.
func buildFilter(n Network, denyUnix bool, pid, tid int) ([]unix.SockFilter, error) {
	p := &bpfProgram{labels: map[string]int{}}
	p.load(offArch)
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, auditArch, "arch_ok", "")
	p.ret(retKill) // another ABI (i386 through int 0x80 on x86-64) would bypass the numbers below
	p.label("arch_ok")
	p.load(offNr)
	if x32Bit != 0 {
		p.jump(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K, x32Bit, "eperm", "")
	}
	for _, nr := range deniedSyscalls {
		p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, uint32(nr), "eperm", "")
	}
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SYS_CLONE3, "enosys", "")
	if pid > 0 {
		for _, nr := range []uintptr{unix.SYS_KILL, unix.SYS_TKILL, unix.SYS_TGKILL, unix.SYS_RT_SIGQUEUEINFO, unix.SYS_RT_TGSIGQUEUEINFO, unix.SYS_PIDFD_OPEN} {
			p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, uint32(nr), "signal", "")
		}
	}
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SYS_CLONE, "clone", "")
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SYS_SOCKET, "socket", "")
	p.ret(retAllow)

	if pid > 0 {
		p.label("signal")
		p.load(offArgs + 0) // the target: a pid, a tid, or a tgid (tgkill)
		for _, v := range []int{pid, tid, -pid} {
			p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, uint32(int32(v)), "eperm", "")
		}
		p.ret(retAllow)
	}

	p.label("clone")
	p.load(offArgs + 8*cloneFlagsArg)
	p.jump(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K, nsFlags, "eperm", "")
	p.ret(retAllow)

	p.label("socket")
	p.load(offArgs + 0) // domain
	if denyUnix {
		p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.AF_UNIX, "eperm", "")
	}
	if n.Unrestricted {
		p.ret(retAllow)
	} else {
		// Landlock governs TCP connect and bind; every other kind of internet socket (UDP,
		// raw, MPTCP, which Landlock does not see) and packet sockets are refused.
		p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.AF_PACKET, "eperm", "")
		p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.AF_INET, "inet", "")
		p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.AF_INET6, "inet", "")
		p.ret(retAllow)
		p.label("inet")
		p.load(offArgs + 8) // type, with SOCK_NONBLOCK and SOCK_CLOEXEC
		p.stmt(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, 0xf)
		p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SOCK_STREAM, "", "eperm")
		p.load(offArgs + 16) // protocol
		p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.IPPROTO_MPTCP, "eperm", "")
		p.ret(retAllow)
	}

	p.label("eperm")
	p.ret(retEPERM)
	p.label("enosys")
	p.ret(retENOSYS)
	return p.link()
}

// installFilter puts the filter on the calling thread only (no TSYNC). no_new_privs must be
// set on the thread already.
func installFilter(ins []unix.SockFilter) error {
	prog := unix.SockFprog{Len: uint16(len(ins)), Filter: &ins[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	return nil
}
