package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// A bind mount's nosuid and nodev options protect only inside the container: on the host, a
// setuid or setgid file that a command left in the workspace runs as its owner for any local
// user, and a device node opens the device. Without CAP_FSETID the kernel clears those bits
// when a file is written or chowned, and without CAP_MKNOD it refuses real devices, but the
// owner of a file may still set them — chmod, install -m, cp -p, tar x, and open or mknod
// with such a mode — and anyone may make a whiteout (a 0:0 character device). So the mode
// change itself is refused, by a seccomp profile: Docker's default profile (a custom profile
// replaces the default, so it is the base) with the calls below allowed only when their mode
// argument asks for neither bit and no device. Anything else they ask for gets the profile's
// default answer, EPERM. openat2, whose mode sits in a struct seccomp cannot read, answers
// ENOSYS, so that programs fall back to openat; io_uring, which opens files without system
// calls, stays refused as in the default profile.

// modeArg names a call whose argument Index is a file mode.
type modeArg struct {
	Name  string
	Index uint
}

// setidModeCalls are the calls that set a file's mode; they run only when the mode has
// neither S_ISUID nor S_ISGID.
var setidModeCalls = []modeArg{
	{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2},
	{"creat", 1}, {"open", 2}, {"openat", 3},
}

// nodeCalls make a file of the type in their mode: allowed for a regular file, a FIFO or a
// socket, never for a device, and never with S_ISUID or S_ISGID.
var nodeCalls = []modeArg{{"mknod", 1}, {"mknodat", 2}}

// nodeTypesAllowed are the mknod types (S_IFMT bits; 0 means a regular file) commands may make.
var nodeTypesAllowed = []uint64{0, unix.S_IFREG, unix.S_IFIFO, unix.S_IFSOCK}

// notImplemented are calls answered with ENOSYS, so that callers fall back to one above.
var notImplemented = []string{"openat2"}

// refused are calls the profile must never allow, whatever the default profile says.
var refused = []string{"io_uring_setup", "io_uring_enter", "io_uring_register"}

const setidBits = unix.S_ISUID | unix.S_ISGID

// Under gVisor (runsc --oci-seccomp) the profile is enforced by gVisor's kernel, not Linux's,
// and two things differ there, so a container under gVisor gets a variant of the profile:
//
//   - gVisor answers every SCMP_ACT_ERRNO with EPERM, whatever errnoRet the rule names
//     (runsc/specutils/seccomp converts the action without reading errnoRet; google/gvisor
//     issue 14688). A call the profile answers ENOSYS — clone3 in Docker's default, openat2
//     in ours — then fails with EPERM, and programs do not fall back: glibc's pthread_create
//     fails (it falls back from clone3 to clone only on ENOSYS), and so would the helper's
//     file operations (from openat2 to openat). The one action gVisor turns into ENOSYS is
//     SCMP_ACT_TRACE when no tracer watches the process (pkg/sentry/kernel/seccomp.go, as
//     Linux does), so those rules become SCMP_ACT_TRACE;
//   - gVisor checks seccomp before a tracer's syscall-enter stop and never again after it
//     (pkg/sentry/kernel/task_syscall.go): a tracer may rewrite the call's number or
//     arguments there, and after a SCMP_ACT_TRACE stop too, and the rewritten call runs
//     unchecked. Linux checks again since 4.8, which is why Docker's default profile allows
//     ptrace only from kernel 4.8 on — but it asks the host's kernel, not gVisor. So ptrace
//     is refused under gVisor: no tracer can rewrite a call past the profile, and none can
//     watch a SCMP_ACT_TRACE call, which therefore always answers ENOSYS.

// untraceable are the calls refused under gVisor only, so that no process has a tracer there.
var untraceable = []string{"ptrace"}

// The profile as the JSON Docker's SecurityOpt takes, and its SHA-256 for the container's
// fingerprint: one for Linux's kernel (runc and the like), one for gVisor.
var (
	linuxProfile  = profileOnce(false)
	gvisorProfile = profileOnce(true)
)

func profileOnce(gvisor bool) func() (string, string) {
	return sync.OnceValues(func() (string, string) {
		b, err := json.Marshal(buildSeccomp(gvisor))
		if err != nil {
			panic("docker: marshal seccomp profile: " + err.Error()) // plain data, cannot fail
		}
		sum := sha256.Sum256(b)
		return string(b), hex.EncodeToString(sum[:])
	})
}

func seccompProfile(gvisor bool) (profile, sha string) {
	if gvisor {
		return gvisorProfile()
	}
	return linuxProfile()
}

func seccompJSON(gvisor bool) string { j, _ := seccompProfile(gvisor); return j }
func seccompHash(gvisor bool) string { _, h := seccompProfile(gvisor); return h }

// buildSeccomp is Docker's default profile with the rules above, in gVisor's variant when
// gvisor is set.
func buildSeccomp(gvisor bool) *seccomp.Seccomp {
	p := seccomp.DefaultProfile()
	guarded := map[string]bool{}
	for _, c := range append(append(setidModeCalls, nodeCalls...), modeArgs(notImplemented)...) {
		guarded[c.Name] = true
	}
	for _, n := range refused {
		guarded[n] = true
	}
	if gvisor {
		for _, n := range untraceable {
			guarded[n] = true
		}
	}
	for _, sc := range p.Syscalls {
		sc.Names = slices.DeleteFunc(sc.Names, func(n string) bool { return guarded[n] })
	}
	p.Syscalls = slices.DeleteFunc(p.Syscalls, func(sc *seccomp.Syscall) bool { return len(sc.Names) == 0 && sc.Name == "" })
	for _, c := range setidModeCalls {
		p.Syscalls = append(p.Syscalls, allowWhen(c, setidBits, 0))
	}
	for _, c := range nodeCalls {
		for _, typ := range nodeTypesAllowed {
			p.Syscalls = append(p.Syscalls, allowWhen(c, unix.S_IFMT|setidBits, typ))
		}
	}
	nosys := uint(unix.ENOSYS)
	p.Syscalls = append(p.Syscalls, &seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{
		Names: notImplemented, Action: specs.ActErrno, ErrnoRet: &nosys,
	}, Comment: "airlock: the mode is out of seccomp's sight; callers fall back to openat"})
	if gvisor {
		for _, sc := range p.Syscalls {
			if sc.Action == specs.ActErrno && sc.ErrnoRet != nil && *sc.ErrnoRet == nosys {
				sc.Action, sc.ErrnoRet = specs.ActTrace, nil
			}
		}
	}
	return p
}

// allowWhen allows c when its mode argument, masked, equals value.
func allowWhen(c modeArg, mask, value uint64) *seccomp.Syscall {
	return &seccomp.Syscall{
		LinuxSyscall: specs.LinuxSyscall{
			Names:  []string{c.Name},
			Action: specs.ActAllow,
			Args:   []specs.LinuxSeccompArg{{Index: c.Index, Value: mask, ValueTwo: value, Op: specs.OpMaskedEqual}},
		},
		Comment: "airlock: no setuid or setgid bit, no device node",
	}
}

func modeArgs(names []string) []modeArg {
	out := make([]modeArg, len(names))
	for i, n := range names {
		out[i] = modeArg{Name: n}
	}
	return out
}
