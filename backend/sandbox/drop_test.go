//go:build linux

package sandbox

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDroppedStatus: a thread's status passes only with every capability set empty and
// no_new_privs set — the bounding set excepted for an unprivileged user's thread that holds
// no capability; a missing line is a failure, not a pass.
func TestDroppedStatus(t *testing.T) {
	const dropped = "Name:\tairlock-helper\nNoNewPrivs:\t1\nCapInh:\t0000000000000000\nCapPrm:\t0000000000000000\n" +
		"CapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nCapAmb:\t0000000000000000\nSeccomp:\t0\n"
	unprivileged := strings.Replace(strings.Replace(dropped, "CapBnd:\t0000000000000000", "CapBnd:\t000001ffffffffff", 1),
		"Name:\tairlock-helper\n", "Name:\tairlock-helper\nUid:\t1000\t1000\t1000\t1000\n", 1)
	tests := []struct {
		name, status, want string
	}{
		{"dropped", dropped, ""},
		{"effective held", strings.Replace(dropped, "CapEff:\t0000000000000000", "CapEff:\t0000000000200000", 1), "CapEff"},
		{"bounding set left", strings.Replace(dropped, "CapBnd:\t0000000000000000", "CapBnd:\t000001ffffffffff", 1), "CapBnd"},
		{"bounding set left by root", strings.Replace(unprivileged, "Uid:\t1000\t1000", "Uid:\t1000\t0", 1), "CapBnd"},
		// An unprivileged process holding no capability cannot empty its bounding set, and
		// under no_new_privs an exec grants it nothing from it.
		{"bounding set left by an unprivileged user", unprivileged, ""},
		{"bounding set left by an unprivileged user, no_new_privs unset", strings.Replace(unprivileged, "NoNewPrivs:\t1", "NoNewPrivs:\t0", 1), "no_new_privs"},
		{"bounding set left by an unprivileged user holding a capability", strings.Replace(unprivileged, "CapPrm:\t0000000000000000", "CapPrm:\t0000000000000001", 1), "CapPrm"},
		{"ambient held", strings.Replace(dropped, "CapAmb:\t0000000000000000", "CapAmb:\t0000000000000100", 1), "CapAmb"},
		{"no_new_privs unset", strings.Replace(dropped, "NoNewPrivs:\t1", "NoNewPrivs:\t0", 1), "no_new_privs"},
		{"a line missing", strings.Replace(dropped, "CapPrm:\t0000000000000000\n", "", 1), "no CapPrm"},
		{"empty", "", "no NoNewPrivs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := droppedStatus(tc.status)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

// TestStatusDone: DropAll skips a step only when a thread's status shows it done; a
// missing line, a capability left or no_new_privs unset is not done.
func TestStatusDone(t *testing.T) {
	const status = "Name:\tairlock-helper\nNoNewPrivs:\t1\nCapPrm:\t000001ffffffffff\nCapBnd:\t0000000000000000\n"
	tests := []struct {
		name, status, key string
		want              bool
	}{
		{"bounding set empty", status, "CapBnd:", true},
		{"bounding set left", strings.Replace(status, "CapBnd:\t0000000000000000", "CapBnd:\t0000000000000001", 1), "CapBnd:", false},
		{"no_new_privs set", status, "NoNewPrivs:", true},
		{"no_new_privs unset", strings.Replace(status, "NoNewPrivs:\t1", "NoNewPrivs:\t0", 1), "NoNewPrivs:", false},
		{"permitted held", status, "CapPrm:", false},
		{"line missing", status, "CapAmb:", false},
		{"value empty", "CapBnd:\t\n", "CapBnd:", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := statusDone(tc.status, tc.key); got != tc.want {
				t.Fatalf("statusDone(%s) = %v, want %v", tc.key, got, tc.want)
			}
		})
	}
}

// TestHoldDumpable: a process that is not dumpable is made dumpable while any hold lasts
// (the user namespace's maps are written then) and is not dumpable again after the last.
func TestHoldDumpable(t *testing.T) {
	was, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, uintptr(was), 0, 0, 0) })
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	check := func(when string, want int) {
		t.Helper()
		if got, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); err != nil || got != want {
			t.Fatalf("%s: dumpable %d (%v), want %d", when, got, err, want)
		}
	}
	first, err := holdDumpable()
	if err != nil {
		t.Fatal(err)
	}
	check("one hold", 1)
	second, err := holdDumpable()
	if err != nil {
		t.Fatal(err)
	}
	first()
	check("the second hold left", 1)
	second()
	check("every hold released", 0)
}
