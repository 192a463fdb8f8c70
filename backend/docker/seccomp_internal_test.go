package docker

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// profileRules decodes the profile the container gets and indexes its rules by call.
func profileRules(t *testing.T, gvisor bool) (*seccomp.Seccomp, map[string][]*seccomp.Syscall) {
	t.Helper()
	var p seccomp.Seccomp
	if err := json.Unmarshal([]byte(seccompJSON(gvisor)), &p); err != nil {
		t.Fatal(err)
	}
	rules := map[string][]*seccomp.Syscall{}
	for _, sc := range p.Syscalls {
		for _, n := range sc.Names {
			rules[n] = append(rules[n], sc)
		}
	}
	return &p, rules
}

// TestSeccompProfileGuardsModes: in the profile the container gets, on either kernel, every
// call that sets a mode is allowed only under a condition on its mode argument and io_uring
// is never allowed; the rest of Docker's default profile is kept.
func TestSeccompProfileGuardsModes(t *testing.T) {
	for _, gvisor := range []bool{false, true} {
		p, rules := profileRules(t, gvisor)
		if p.DefaultAction != specs.ActErrno {
			t.Errorf("gVisor %v: default action %s", gvisor, p.DefaultAction)
		}
		for _, c := range append(append([]modeArg(nil), setidModeCalls...), nodeCalls...) {
			if len(rules[c.Name]) == 0 {
				t.Errorf("gVisor %v: %s has no rule: the call would be refused outright", gvisor, c.Name)
			}
			for _, sc := range rules[c.Name] {
				if sc.Action != specs.ActAllow || len(sc.Args) != 1 || sc.Args[0].Index != c.Index || sc.Args[0].Op != specs.OpMaskedEqual || sc.Args[0].Value&setidBits != setidBits {
					t.Errorf("gVisor %v: rule %+v does not guard the mode argument %d", gvisor, sc.LinuxSyscall, c.Index)
				}
			}
		}
		for _, n := range []string{"io_uring_setup", "io_uring_enter", "io_uring_register"} {
			if len(rules[n]) != 0 {
				t.Errorf("gVisor %v: %s has rules: %+v", gvisor, n, rules[n][0].LinuxSyscall)
			}
		}
		for _, n := range []string{"read", "write", "execve", "clone", "setsockopt", "mkdirat", "fchown", "process_vm_readv"} {
			if len(rules[n]) == 0 {
				t.Errorf("gVisor %v: %s lost from the default profile", gvisor, n)
			}
		}
	}
}

// TestSeccompProfileENOSYS: clone3 and openat2 answer ENOSYS on either kernel, so that glibc
// falls back to clone and the helper to openat. On Linux that is errnoRet; gVisor answers
// every errno action with EPERM, so there they are SCMP_ACT_TRACE (ENOSYS without a tracer)
// and ptrace is refused, so that no process has a tracer. Nothing else changes.
func TestSeccompProfileENOSYS(t *testing.T) {
	linux, lr := profileRules(t, false)
	gv, gr := profileRules(t, true)
	for _, n := range []string{"clone3", "openat2"} {
		if r := withoutCaps(lr[n]); len(r) != 1 || r[0].Action != specs.ActErrno || r[0].ErrnoRet == nil || *r[0].ErrnoRet != uint(unix.ENOSYS) {
			t.Errorf("linux: %s: %+v", n, r)
		}
		if r := withoutCaps(gr[n]); len(r) != 1 || r[0].Action != specs.ActTrace {
			t.Errorf("gVisor: %s: %+v", n, r)
		}
	}
	if len(withoutCaps(lr["ptrace"])) == 0 {
		t.Error("linux: ptrace lost from the default profile")
	}
	if len(gr["ptrace"]) != 0 {
		t.Errorf("gVisor: ptrace has rules: %+v", gr["ptrace"][0].LinuxSyscall)
	}
	// Every errno gVisor gives is EPERM: a rule that asks for another would not get it.
	for _, sc := range gv.Syscalls {
		if sc.Action == specs.ActErrno && sc.ErrnoRet != nil && *sc.ErrnoRet != uint(unix.EPERM) {
			t.Errorf("gVisor: %v asks for errno %d, which gVisor answers with EPERM", sc.Names, *sc.ErrnoRet)
		}
	}
	// Otherwise the same rules.
	if len(linux.Syscalls) != len(gv.Syscalls) {
		t.Fatalf("linux has %d rules, gVisor %d", len(linux.Syscalls), len(gv.Syscalls))
	}
	for i, sc := range linux.Syscalls {
		g := gv.Syscalls[i]
		names := slices.DeleteFunc(slices.Clone(sc.Names), func(n string) bool { return n == "ptrace" })
		if !slices.Equal(names, g.Names) || (g.Action != sc.Action && g.Action != specs.ActTrace) {
			t.Errorf("rule %d: linux %v %s, gVisor %v %s", i, sc.Names, sc.Action, g.Names, g.Action)
		}
	}
}

// withoutCaps are the rules that apply to a container without capabilities (Docker drops a
// rule whose Includes name a capability the container lacks; Airlock's add none of these).
func withoutCaps(rules []*seccomp.Syscall) []*seccomp.Syscall {
	return slices.DeleteFunc(slices.Clone(rules), func(sc *seccomp.Syscall) bool {
		return sc.Includes != nil && len(sc.Includes.Caps) > 0
	})
}
