//go:build linux

package sandbox

import (
	"encoding/binary"
	"slices"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The filter is checked against its specification by running it in golang.org/x/net/bpf's
// classic BPF machine, the instruction set seccomp uses. That machine reads packets in
// network byte order, seccomp reads struct seccomp_data in the CPU's: each 32-bit word is
// laid out so that the machine reads what the kernel would.

const guardPID, guardTID = 4242, 4250

// negGuardPID is -guardPID as the 32-bit word a kill(-pgid) carries.
var negGuardPID = uint64(uint32(0xffffffff - guardPID + 1))

// seccompData lays out struct seccomp_data for the machine.
func seccompData(arch, nr uint32, args [6]uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[offNr:], nr)
	binary.BigEndian.PutUint32(b[offArch:], arch)
	for i, a := range args {
		// The low word first, as on the little-endian machines the filter is built for.
		binary.BigEndian.PutUint32(b[offArgs+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[offArgs+8*i+4:], uint32(a>>32))
	}
	return b
}

// evalFilter runs prog over one call and returns the seccomp action.
func evalFilter(t testing.TB, prog []unix.SockFilter, arch, nr uint32, args [6]uint64) uint32 {
	t.Helper()
	raw := make([]bpf.RawInstruction, len(prog))
	for i, in := range prog {
		raw[i] = bpf.RawInstruction{Op: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	ins, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("the filter holds an instruction the BPF machine does not know")
	}
	vm, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatal(err)
	}
	v, err := vm.Run(seccompData(arch, nr, args))
	if err != nil {
		t.Fatal(err)
	}
	return uint32(v)
}

// specAction is what the filter must answer, written from the rules as the package doc and
// [buildFilter] state them, independently of how the program is laid out.
func specAction(s filterSpec, arch, nr uint32, a [6]uint64) uint32 {
	lo := func(i int) uint32 { return uint32(a[i]) }
	in := func(list []uintptr) bool { return slices.Contains(list, uintptr(nr)) }
	guarded := func(v uint32) bool {
		return s.PID > 0 && (int32(v) == int32(s.PID) || int32(v) == int32(s.TID) || int32(v) == -int32(s.PID))
	}
	restricted := !s.Network.Unrestricted
	switch {
	case arch != auditArch:
		return retKill
	case x32Bit != 0 && nr&x32Bit != 0, in(deniedSyscalls):
		return retEPERM
	case in(absentSyscalls):
		return retENOSYS
	case !s.PrivateIPC && in(ipcSyscalls):
		return retEPERM
	case in(signalSyscalls) && guarded(lo(0)):
		return retEPERM
	case nr == unix.SYS_CLONE && uint64(lo(cloneFlagsArg))&nsFlags != 0:
		return retEPERM
	case nr == unix.SYS_IOCTL && slices.Contains(deniedIoctls, lo(1)):
		return retEPERM
	case nr == unix.SYS_FCNTL && (lo(1) == unix.F_SETOWN_EX || lo(1) == unix.F_SETOWN && guarded(lo(2))):
		return retEPERM
	case nr == unix.SYS_PRLIMIT64 && lo(0) != 0 && a[2] != 0:
		return retEPERM
	case nr == unix.SYS_SOCKET:
		return specSocket(s, lo(0), lo(1), lo(2))
	case restricted && (nr == unix.SYS_SENDTO || nr == unix.SYS_SENDMMSG) && lo(3)&unix.MSG_FASTOPEN != 0,
		restricted && nr == unix.SYS_SENDMSG && lo(2)&unix.MSG_FASTOPEN != 0,
		restricted && nr == unix.SYS_SETSOCKOPT && lo(1) == unix.IPPROTO_TCP && lo(2) == unix.TCP_FASTOPEN_CONNECT,
		restricted && nr == unix.SYS_LISTEN && len(s.Network.BindTCP) == 0:
		return retEPERM
	}
	return retAllow
}

func specSocket(s filterSpec, domain, typ, proto uint32) uint32 {
	switch domain {
	case unix.AF_UNIX:
		if s.DenyUnix {
			return retEPERM
		}
		return retAllow
	case unix.AF_NETLINK:
		if proto == unix.NETLINK_ROUTE {
			return retAllow
		}
		return retEPERM
	case unix.AF_INET, unix.AF_INET6:
		n := s.Network
		switch {
		case n.Unrestricted:
			return retAllow
		case len(n.ConnectTCP)+len(n.BindTCP) == 0:
			return retEPERM
		case typ&0xf == unix.SOCK_STREAM && (proto == 0 || proto == unix.IPPROTO_TCP):
			return retAllow
		}
	}
	return retEPERM
}

// specFor picks one of the filter's configurations from a fuzzed byte.
func specFor(k uint8) filterSpec {
	s := filterSpec{DenyUnix: k&1 != 0, PrivateIPC: k&2 != 0}
	switch k >> 2 % 4 {
	case 0: // none
	case 1:
		s.Network = Network{ConnectTCP: []uint16{8080}}
	case 2:
		s.Network = Network{ConnectTCP: []uint16{8080}, BindTCP: []uint16{9090}}
	case 3:
		s.Network = Network{Unrestricted: true}
	}
	if k&16 == 0 {
		s.PID, s.TID = guardPID, guardTID
	}
	return s
}

// interesting are the syscall numbers the filter looks at, so that the fuzzer meets them
// often; any other number is tried too.
var interesting = slices.Concat(deniedSyscalls, absentSyscalls, ipcSyscalls, signalSyscalls, []uintptr{
	unix.SYS_CLONE, unix.SYS_SOCKET, unix.SYS_IOCTL, unix.SYS_FCNTL, unix.SYS_PRLIMIT64,
	unix.SYS_SENDTO, unix.SYS_SENDMMSG, unix.SYS_SENDMSG, unix.SYS_SETSOCKOPT, unix.SYS_LISTEN,
	unix.SYS_READ, unix.SYS_CONNECT, unix.SYS_BIND,
})

// FuzzFilterMatchesSpec: for every configuration and call, the filter answers what the
// rules say — no call the rules refuse is allowed, and nothing else is refused.
func FuzzFilterMatchesSpec(f *testing.F) {
	f.Add(uint8(0), uint16(1), uint64(unix.AF_VSOCK), uint64(1), uint64(0), uint64(0), false)
	f.Add(uint8(4), uint16(3), uint64(guardTID), uint64(9), uint64(0), uint64(0), false)
	f.Add(uint8(4), uint16(0), uint64(3), uint64(unix.F_SETOWN), uint64(guardPID), uint64(0), false)
	f.Add(uint8(12), uint16(0), uint64(unix.AF_INET), uint64(unix.SOCK_DGRAM), uint64(0), uint64(0), false)
	f.Add(uint8(4), uint16(0), uint64(3), uint64(0), uint64(0), uint64(unix.MSG_FASTOPEN), false)
	f.Fuzz(func(t *testing.T, k uint8, pick uint16, a0, a1, a2, a3 uint64, raw bool) {
		s := specFor(k)
		nr := uint32(pick)
		if !raw {
			nr = uint32(interesting[int(pick)%len(interesting)])
		}
		args := [6]uint64{a0, a1, a2, a3, a0 ^ a1, a2 ^ a3}
		prog, err := buildFilter(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, arch := range []uint32{auditArch, auditArch ^ 1} {
			if got, want := evalFilter(t, prog, arch, nr, args), specAction(s, arch, nr, args); got != want {
				t.Fatalf("spec %+v, arch %#x, nr %d, args %#x: filter %#x, rules %#x", s, arch, nr, args, got, want)
			}
		}
	})
}

// TestFilterMatchesSpecOnEveryRule walks each configuration over each syscall the filter
// looks at with the arguments that decide it, so that the table of rules is covered without
// a fuzzing run.
func TestFilterMatchesSpecOnEveryRule(t *testing.T) {
	argSets := [][6]uint64{
		{},
		{unix.AF_VSOCK, unix.SOCK_STREAM},
		{unix.AF_NETLINK, unix.SOCK_RAW, 4},
		{unix.AF_NETLINK, unix.SOCK_RAW, 0},
		{unix.AF_INET, unix.SOCK_STREAM | unix.SOCK_CLOEXEC, 0},
		{unix.AF_INET6, unix.SOCK_STREAM, unix.IPPROTO_MPTCP},
		{unix.AF_INET, unix.SOCK_STREAM, 132},
		{unix.AF_INET, unix.SOCK_DGRAM, 0},
		{unix.AF_UNIX, unix.SOCK_STREAM, 0},
		{guardPID}, {guardTID}, {negGuardPID}, {1 << 32},
		{3, unix.F_SETOWN, guardTID}, {3, unix.F_SETOWN, 1}, {3, unix.F_SETOWN_EX, 0},
		{3, unix.TIOCSTI}, {3, unix.TIOCLINUX}, {3, unix.TIOCGWINSZ}, {3, fioSetOwn},
		{3, 0, 0, unix.MSG_FASTOPEN}, {3, 0, unix.MSG_FASTOPEN}, {3, unix.IPPROTO_TCP, unix.TCP_FASTOPEN_CONNECT},
		{0, unix.RLIMIT_CPU, 1 << 40}, {guardPID, unix.RLIMIT_CPU, 0}, {guardPID, unix.RLIMIT_CPU, 1 << 40},
		{unix.CLONE_NEWUSER}, {uint64(unix.SIGCHLD) | unix.CLONE_VM | unix.CLONE_VFORK},
	}
	for k := 0; k < 32; k++ {
		s := specFor(uint8(k))
		prog, err := buildFilter(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, nr := range interesting {
			for _, args := range argSets {
				if got, want := evalFilter(t, prog, auditArch, uint32(nr), args), specAction(s, auditArch, uint32(nr), args); got != want {
					t.Errorf("spec %+v, nr %d, args %#x: filter %#x, rules %#x", s, nr, args, got, want)
				}
			}
		}
	}
}
