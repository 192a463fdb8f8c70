package helper

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/backend/procgroup"
)

// A helper that runs as the same user as its commands is theirs to kill: kill(2),
// pidfd_send_signal and F_SETOWN all let a process signal another of its own user. Where the
// helper can start as root with CAP_SETUID and CAP_SETGID (a Docker container that adds only
// those two), it keeps root as its real and saved user ID and takes the commands' user only
// as its effective one ([RunAs.Enter]):
//
//   - the kernel lets a process signal another only when their real or saved IDs meet; a
//     command's are all the user's, the helper's real and saved IDs are root's, so no signal
//     route reaches it, and ptrace or /proc/PID/mem need the same and more (the helper is not
//     dumpable and holds capabilities a command lacks);
//   - everything the helper does itself — file tools, resolving working directories,
//     looking programs up — happens as the user (the effective and filesystem IDs), so files
//     it writes are the user's, exactly as when it ran as the user;
//   - commands start from one thread of the helper whose effective capabilities are raised
//     again ([Spawner]); the child sets all its IDs to the user's before it executes, which
//     clears every capability, so commands run with none.

// RunAs is the user commands run as, by number.
type RunAs struct {
	UID, GID uint32
}

// ParseRunAs reads "UID:GID"; both are numbers and UID is not root's.
func ParseRunAs(s string) (RunAs, error) {
	u, g, ok := strings.Cut(s, ":")
	uid, err1 := strconv.ParseUint(u, 10, 32)
	gid, err2 := strconv.ParseUint(g, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return RunAs{}, fmt.Errorf("run-as: want UID:GID in numbers, got %q", s)
	}
	if uid == 0 {
		return RunAs{}, errors.New("run-as: commands run as root would share the helper's real user; the helper runs them as itself instead")
	}
	return RunAs{UID: uint32(uid), GID: uint32(gid)}, nil
}

// Enter makes the calling process, which must be root with CAP_SETUID and CAP_SETGID, act
// as r while keeping root as its real and saved user ID, and returns the spawner its
// commands start from. Supplementary groups are dropped first.
func (r RunAs) Enter() (*Spawner, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("run-as: the helper must start as root to run commands as %d:%d, not as uid %d", r.UID, r.GID, os.Geteuid())
	}
	if err := syscall.Setgroups(nil); err != nil {
		return nil, fmt.Errorf("run-as: drop supplementary groups: %w", err)
	}
	if err := syscall.Setresgid(int(r.GID), int(r.GID), int(r.GID)); err != nil {
		return nil, fmt.Errorf("run-as: set group %d: %w", r.GID, err)
	}
	if err := syscall.Setresuid(0, int(r.UID), 0); err != nil {
		return nil, fmt.Errorf("run-as: set effective user %d: %w", r.UID, err)
	}
	// A change of IDs resets the dumpable flag to the system's default; keep it off.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("run-as: %w", err)
	}
	return newSpawner(r)
}

// Spawner is the one thread commands start from: locked to its goroutine for the helper's
// life, with CAP_SETUID and CAP_SETGID effective, which the children need to take the
// user's IDs. Go never starts other threads from a locked one, so the capabilities stay on
// it.
type Spawner struct {
	work chan func()
	cred *syscall.Credential
}

func newSpawner(r RunAs) (*Spawner, error) {
	s := &Spawner{work: make(chan func()), cred: &syscall.Credential{Uid: r.UID, Gid: r.GID, Groups: []uint32{}}}
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked
		if err := raiseSetID(); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for f := range s.work {
			f()
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return s, nil
}

// Do runs f on the spawner's thread. A process f starts must carry [Spawner.Credential],
// so that it takes the user's IDs, and loses the capabilities, before it executes.
func (s *Spawner) Do(f func()) {
	done := make(chan struct{})
	s.work <- func() { defer close(done); f() }
	<-done
}

// Credential is what a command's SysProcAttr carries.
func (s *Spawner) Credential() *syscall.Credential { return s.cred }

// start starts spec as the user from the spawner's thread.
func (s *Spawner) start(spec procgroup.Spec) (*procgroup.Process, error) {
	isolate := spec.Isolate
	spec.Isolate = func(a *syscall.SysProcAttr) {
		if isolate != nil {
			isolate(a)
		}
		a.Credential = s.cred
	}
	var proc *procgroup.Process
	var err error
	s.Do(func() { proc, err = procgroup.Start(spec) })
	return proc, err
}

// raiseSetID makes CAP_SETUID and CAP_SETGID effective on the calling thread again.
func raiseSetID() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("run-as: capget: %w", err)
	}
	want := uint32(1<<unix.CAP_SETUID | 1<<unix.CAP_SETGID)
	if data[0].Permitted&want != want {
		return errors.New("run-as: CAP_SETUID and CAP_SETGID are not permitted: the container must add them for the helper")
	}
	data[0].Effective |= want
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("run-as: capset: %w", err)
	}
	return nil
}
