//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"
)

// sysProcAttr is how the host starts a helper for n: in new mount, PID, IPC and UTS
// namespaces, a network namespace when n.Network, and a user namespace when n.User (the
// caller's uid and gid mapped to themselves, with the capabilities the set-up needs kept
// across the exec: they hold only inside the new user namespace). The helper is the leader
// of a session of its own, with no controlling terminal.
func (n Namespace) sysProcAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{
		Setsid:     true,
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS,
	}
	if n.Network {
		a.Cloneflags |= syscall.CLONE_NEWNET
	}
	if n.User {
		uid, gid := os.Getuid(), os.Getgid()
		a.Cloneflags |= syscall.CLONE_NEWUSER
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
		a.GidMappingsEnableSetgroups = false
		a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP}
		if n.Network {
			// The loopback is brought up in the helper (Enter).
			a.AmbientCaps = append(a.AmbientCaps, unix.CAP_NET_ADMIN)
		}
	}
	return a
}

// Start starts cmd in n's namespaces (sysProcAttr). With a user namespace, the
// parent writes the child's uid and gid maps before the child execs, and the kernel lets it
// only while the child — a copy of this process until then — is dumpable: a process that is
// not dumpable (cmd/airlock makes itself so, first thing) has /proc entries that belong to
// root, uid_map among them, and an unprivileged parent gets EACCES. So this process is
// dumpable while such a child starts, and returns to what it was once the last start in
// progress has returned.
//
// That leaves Airlock's /proc entries open to processes of its own user for a few
// milliseconds. No command can use them: in namespace mode every command runs in a PID
// namespace of its own, which does not show Airlock's process, and in the fallback mode
// Landlock keeps a command from tracing, or reading the memory of, any process outside its
// domain, and seccomp refuses ptrace and process_vm_readv.
func (n Namespace) Start(cmd *exec.Cmd) error {
	cmd.SysProcAttr = n.sysProcAttr()
	if !n.User {
		return cmd.Start()
	}
	release, err := holdDumpable()
	if err != nil {
		return err
	}
	defer release()
	return cmd.Start()
}

// dumpable counts the starts that hold this process dumpable (holdDumpable), and what it
// was before the first of them.
var dumpable struct {
	sync.Mutex
	holds int
	was   int
}

// holdDumpable makes this process dumpable until release is called, and then, once no other
// hold is left, returns it to what it was.
func holdDumpable() (release func(), err error) {
	dumpable.Lock()
	defer dumpable.Unlock()
	if dumpable.holds == 0 {
		was, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
		if err != nil {
			return nil, fmt.Errorf("namespace: read whether this process is dumpable: %w", err)
		}
		if was != 1 {
			if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err != nil {
				return nil, fmt.Errorf("namespace: make this process dumpable for the user namespace's maps: %w", err)
			}
		}
		dumpable.was = was
	}
	dumpable.holds++
	return func() {
		dumpable.Lock()
		defer dumpable.Unlock()
		if dumpable.holds--; dumpable.holds == 0 && dumpable.was != 1 {
			_ = unix.Prctl(unix.PR_SET_DUMPABLE, uintptr(dumpable.was), 0, 0, 0)
		}
	}, nil
}

// Enter builds the namespace's filesystem and makes it the process's root. It runs in the
// helper, first thing, in a mount namespace of its own and with CAP_SYS_ADMIN there. It
// follows bubblewrap: a tmpfs becomes the root for a moment, the host's tree is reached at
// /oldroot while the new tree is assembled at /newroot, and the new tree then becomes the
// root with the old one detached.
func (n Namespace) Enter() error {
	if n.Network {
		// A relay for the egress proxy listens on 127.0.0.1; the new namespace's loopback
		// starts down.
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("namespace: loopback: %w", err)
		}
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("namespace: make / private: %w", err)
	}
	base := "/tmp"
	if fi, err := os.Stat(base); err != nil || !fi.IsDir() {
		base = "/mnt"
	}
	if err := unix.Mount("tmpfs", base, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700,size=64k"); err != nil {
		return fmt.Errorf("namespace: base tmpfs on %s: %w", base, err)
	}
	for _, d := range []string{"newroot", "oldroot", "empty.d"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o700); err != nil {
			return fmt.Errorf("namespace: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "empty"), nil, 0o000); err != nil {
		return fmt.Errorf("namespace: %w", err)
	}
	if err := os.Chmod(filepath.Join(base, "empty.d"), 0o000); err != nil {
		return fmt.Errorf("namespace: %w", err)
	}
	if err := unix.PivotRoot(base, filepath.Join(base, "oldroot")); err != nil {
		return fmt.Errorf("namespace: pivot_root to the base tmpfs: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("namespace: %w", err)
	}
	if err := n.assemble(); err != nil {
		return err
	}
	if err := unix.Chdir("/newroot"); err != nil {
		return fmt.Errorf("namespace: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("namespace: pivot_root to the new tree: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("namespace: detach the host's tree: %w", err)
	}
	return unix.Chdir("/")
}

const (
	roAttrs = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
	rwAttrs = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV
)

// assemble builds /newroot from /oldroot: the host read-only, the covers, /dev and /proc,
// then the roots, pins, read-only paths and masks, each after what contains it.
func (n Namespace) assemble() error {
	if err := bindTree("/oldroot", "/newroot", roAttrs); err != nil {
		return fmt.Errorf("namespace: the host's tree: %w", err)
	}
	for _, c := range n.Covers {
		if err := unix.Mount("tmpfs", "/newroot"+c, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m"); err != nil {
			return fmt.Errorf("namespace: cover %s: %w", c, err)
		}
	}
	if err := makeDev("/newroot/dev"); err != nil {
		return err
	}
	if err := unix.Mount("proc", "/newroot/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("namespace: mount a fresh /proc: %w", err)
	}
	type bind struct {
		path  string
		attrs uint64
		src   string
	}
	var binds []bind
	for _, r := range n.WriteRoots {
		binds = append(binds, bind{r, rwAttrs, ""})
	}
	for _, r := range n.ReadRoots {
		binds = append(binds, bind{r, roAttrs, ""})
	}
	for _, r := range n.Pins {
		binds = append(binds, bind{r, rwAttrs, ""})
	}
	for _, r := range n.ReadOnly {
		binds = append(binds, bind{r, roAttrs, ""})
	}
	for _, r := range n.Masks {
		src := "/empty"
		if n.MaskDirs[r] {
			src = "/empty.d"
		}
		binds = append(binds, bind{r, roAttrs | unix.MOUNT_ATTR_NOEXEC, src})
	}
	// Parents first: a mount made before one above it would be covered by it.
	sort.SliceStable(binds, func(i, j int) bool { return depth(binds[i].path) < depth(binds[j].path) })
	for _, b := range binds {
		src := b.src
		if src == "" {
			src = "/oldroot" + b.path
		}
		dst := "/newroot" + b.path
		if err := mountPoint(dst, src); err != nil {
			return fmt.Errorf("namespace: %s: %w", b.path, err)
		}
		if err := bindTree(src, dst, b.attrs); err != nil {
			return fmt.Errorf("namespace: bind %s: %w", b.path, err)
		}
	}
	// The covers are read-only once the roots beneath them have their mount points.
	for _, c := range append(append([]string(nil), n.Covers...), "/dev") {
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		if err := unix.MountSetattr(unix.AT_FDCWD, "/newroot"+c, 0, &attr); err != nil {
			return fmt.Errorf("namespace: make %s read-only: %w", c, err)
		}
	}
	return nil
}

func depth(p string) int { return strings.Count(p, "/") }

// mountPoint makes sure dst exists as what src is, inside a cover's tmpfs where it is
// missing.
func mountPoint(dst, src string) error {
	if _, err := os.Lstat(dst); err == nil {
		return nil
	}
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if fi.IsDir() {
		return os.Mkdir(dst, 0o755)
	}
	return os.WriteFile(dst, nil, 0o600)
}

// bindTree binds src and everything mounted beneath it at dst, setting attrs on every
// mount of the copy (the new mount API does that in one call, where mount(2) would need a
// remount per submount).
func bindTree(src, dst string, attrs uint64) error {
	fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("open_tree %s: %w", src, err)
	}
	defer unix.Close(fd)
	attr := unix.MountAttr{Attr_set: attrs, Propagation: unix.MS_PRIVATE}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("mount_setattr %s: %w", src, err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount to %s: %w", dst, err)
	}
	return nil
}

// devNodes are the devices a helper's /dev holds; there is no tty, no pts, no console.
var devNodes = []string{"null", "zero", "full", "random", "urandom"}

// makeDev gives the new tree a /dev of its own: the device nodes bound from the host's, a
// private /dev/shm, and the usual links into /proc.
func makeDev(dev string) error {
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return fmt.Errorf("namespace: /dev: %w", err)
	}
	for _, d := range devNodes {
		p := filepath.Join(dev, d)
		if err := os.WriteFile(p, nil, 0o666); err != nil {
			return fmt.Errorf("namespace: /dev/%s: %w", d, err)
		}
		if err := unix.Mount("/oldroot/dev/"+d, p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("namespace: bind /dev/%s: %w", d, err)
		}
	}
	for name, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return fmt.Errorf("namespace: /dev/%s: %w", name, err)
		}
	}
	shm := filepath.Join(dev, "shm")
	if err := os.Mkdir(shm, 0o755); err != nil {
		return fmt.Errorf("namespace: /dev/shm: %w", err)
	}
	if err := unix.Mount("tmpfs", shm, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=64m"); err != nil {
		return fmt.Errorf("namespace: /dev/shm: %w", err)
	}
	return nil
}

// DropAll takes every capability away for good from every thread of the process — the
// bounding set emptied, ambient and inheritable cleared, no_new_privs set — so that the
// process holds no capability, even as root, and nothing it starts can gain one (setuid
// programs included). Capabilities and no_new_privs belong to each thread, and the Go
// runtime runs several: each step is made on all of them at once through psx, which ends
// the process if any thread's result differs from the others'. A thread made afterwards
// copies the credentials of the thread that makes it. [VerifyDropped] checks the outcome on
// every thread. An unprivileged process outside a user namespace keeps its bounding set: it
// holds no capability to empty it with, and no_new_privs leaves an exec nothing to grant.
//
// A step that every thread already shows done (/proc) is not broadcast: each psx call
// stops every thread and waits for each in turn, and emptying the bounding set takes one
// call per capability — some 40, most of a helper's drop under load. The resident helper
// empties its bounding set and sets no_new_privs before the runtime starts a second thread
// (backend/helper), so only the capset is broadcast there. Neither can be undone, and a new
// thread copies them from the thread that makes it, so what every thread shows now holds
// for every later thread too.
func DropAll() error {
	done, err := threadsDone()
	if err != nil {
		return err
	}
	if !done["NoNewPrivs:"] {
		if _, _, e := psx.Syscall6(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); e != 0 {
			return fmt.Errorf("no_new_privs: %w", e)
		}
	}
	// Emptying the bounding set needs CAP_SETPCAP. An unprivileged process that holds no
	// capability (a helper outside a user namespace) can neither empty it nor gain anything
	// from it: under no_new_privs an exec grants no capability beyond those held before.
	if !done["CapBnd:"] && !(done["CapPrm:"] && os.Geteuid() != 0) {
		// Capabilities are numbered without gaps: the first the kernel does not know ends
		// the loop (EINVAL).
		for c := 0; c <= 63; c++ {
			_, _, e := psx.Syscall6(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0, 0)
			if e == unix.EINVAL && c > 0 {
				break
			}
			if e != 0 {
				return fmt.Errorf("drop capability %d from the bounding set: %w", c, e)
			}
		}
	}
	if !done["CapAmb:"] {
		if _, _, e := psx.Syscall6(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0); e != 0 && e != unix.EINVAL {
			return fmt.Errorf("clear ambient capabilities: %w", e)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if _, _, e := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("capset: %w", e)
	}
	return nil
}

// capLines are the lines of /proc/PID/task/TID/status that must read zero once every
// capability is gone.
var capLines = []string{"CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"}

// VerifyDropped reports an error unless every thread of the process holds no capability in
// any set (bounding and ambient included; the bounding set of a process that holds none
// may stay, as DropAll leaves it) and has no_new_privs set, as the kernel reports them in
// /proc.
func VerifyDropped() error {
	return eachThread(func(tid, status string) error {
		if err := droppedStatus(status); err != nil {
			return fmt.Errorf("thread %s: %w", tid, err)
		}
		return nil
	})
}

// eachThread calls f with each thread's status file; a thread that ended meanwhile is
// skipped.
func eachThread(f func(tid, status string) error) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("list threads: %w", err)
	}
	for _, t := range tasks {
		status, err := os.ReadFile("/proc/self/task/" + t.Name() + "/status")
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // the thread ended
			}
			return fmt.Errorf("thread %s: %w", t.Name(), err)
		}
		if err := f(t.Name(), string(status)); err != nil {
			return err
		}
	}
	return nil
}

// threadsDone reports, for NoNewPrivs:, CapBnd: and CapAmb:, whether every thread's
// status already shows that step of [DropAll] done, and for CapPrm: whether no thread holds
// a capability.
func threadsDone() (map[string]bool, error) {
	done := map[string]bool{"NoNewPrivs:": true, "CapBnd:": true, "CapAmb:": true, "CapPrm:": true}
	err := eachThread(func(_, status string) error {
		for key := range done {
			done[key] = done[key] && statusDone(status, key)
		}
		return nil
	})
	return done, err
}

// statusDone reports whether one thread's status shows key done (see stepDone). A missing
// line is not done.
func statusDone(status, key string) bool {
	val, ok := statusValue(status, key)
	return ok && stepDone(key, val)
}

// stepDone reports whether val, a thread's status value for key, shows that step done:
// no_new_privs set, or the capability set empty.
func stepDone(key, val string) bool {
	if key == "NoNewPrivs:" {
		return val == "1"
	}
	return val != "" && strings.Trim(val, "0") == ""
}

// droppedStatus checks one thread's status file. A bounding set that is not empty passes
// only on a thread of an unprivileged user that holds no capability and has no_new_privs
// set (see [DropAll]).
func droppedStatus(status string) error {
	for _, key := range append([]string{"NoNewPrivs:"}, capLines...) {
		val, ok := statusValue(status, key)
		switch {
		case !ok:
			return fmt.Errorf("status has no %s line", strings.TrimSuffix(key, ":"))
		case stepDone(key, val):
		case key == "CapBnd:" && unprivileged(status) && statusDone(status, "CapPrm:") && statusDone(status, "NoNewPrivs:"):
		case key == "NoNewPrivs:":
			return errors.New("no_new_privs is not set")
		default:
			return fmt.Errorf("%s %s: capabilities held", strings.TrimSuffix(key, ":"), val)
		}
	}
	return nil
}

// unprivileged reports whether a thread's status shows an effective uid other than root's.
func unprivileged(status string) bool {
	ids, _ := statusValue(status, "Uid:")
	f := strings.Fields(ids)
	return len(f) == 4 && f[1] != "0"
}

// statusValue is the value of a status file's line for key ("CapBnd:"), and whether the
// file has that line.
func statusValue(status, key string) (string, bool) {
	for line := range strings.SplitSeq(status, "\n") {
		if k, val, _ := strings.Cut(line, "\t"); k == key {
			return strings.TrimSpace(val), true
		}
	}
	return "", false
}

// loopbackUp brings up the network namespace's loopback interface.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
