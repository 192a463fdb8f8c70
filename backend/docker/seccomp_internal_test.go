package docker

import (
	"encoding/json"
	"testing"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// TestSeccompProfileGuardsModes: in the profile the container gets, every call that sets a
// mode is allowed only under a condition on its mode argument, openat2 answers ENOSYS, and
// io_uring is never allowed; the rest of Docker's default profile is kept.
func TestSeccompProfileGuardsModes(t *testing.T) {
	js := seccompJSON()
	var p seccomp.Seccomp
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		t.Fatal(err)
	}
	if p.DefaultAction != specs.ActErrno {
		t.Errorf("default action %s", p.DefaultAction)
	}
	rules := map[string][]*seccomp.Syscall{}
	for _, sc := range p.Syscalls {
		for _, n := range sc.Names {
			rules[n] = append(rules[n], sc)
		}
	}
	for _, c := range append(append([]modeArg(nil), setidModeCalls...), nodeCalls...) {
		t.Run(c.Name, func(t *testing.T) {
			if len(rules[c.Name]) == 0 {
				t.Fatal("no rule: the call would be refused outright")
			}
			for _, sc := range rules[c.Name] {
				if sc.Action != specs.ActAllow || len(sc.Args) != 1 || sc.Args[0].Index != c.Index || sc.Args[0].Op != specs.OpMaskedEqual || sc.Args[0].Value&setidBits != setidBits {
					t.Errorf("rule %+v does not guard the mode argument %d", sc.LinuxSyscall, c.Index)
				}
			}
		})
	}
	for _, n := range []string{"io_uring_setup", "io_uring_enter", "io_uring_register"} {
		if len(rules[n]) != 0 {
			t.Errorf("%s has rules: %+v", n, rules[n][0].LinuxSyscall)
		}
	}
	if r := rules["openat2"]; len(r) != 1 || r[0].Action != specs.ActErrno || r[0].ErrnoRet == nil || *r[0].ErrnoRet != 38 {
		t.Errorf("openat2: %+v", r)
	}
	for _, n := range []string{"read", "write", "execve", "clone", "setsockopt", "mkdirat", "fchown"} {
		if len(rules[n]) == 0 {
			t.Errorf("%s lost from the default profile", n)
		}
	}
}
