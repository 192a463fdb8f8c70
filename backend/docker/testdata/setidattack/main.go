// Command setidattack tries, in the directory it is given, every system call that can leave
// a setuid or setgid file or a device node — and an allowed chmod whose mode a ptrace tracer
// rewrites at its syscall-enter stop — and prints one line per try: NAME ok or NAME the
// error. It is built by the Docker backend's tests and run inside the container as a
// command, where each try must fail; on the host afterwards no such file may exist.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const sysFchmodat2 = 452 // kernel 6.6

func main() {
	if len(os.Args) == 3 && os.Args[1] == chmodChild {
		chmodChildMain(os.Args[2])
	}
	dir := os.Args[1]
	at := func(name string) string { return filepath.Join(dir, name) }
	plain := func(name string) int {
		fd, err := unix.Open(at(name), unix.O_CREAT|unix.O_WRONLY, 0o755)
		if err != nil {
			fmt.Println("setup", name, err)
			os.Exit(1)
		}
		return fd
	}
	try := func(name string, err error) {
		if err == nil {
			fmt.Println(name, "ok")
			return
		}
		fmt.Println(name, err)
	}
	closeOK := func(fd int, err error) error {
		if err == nil {
			_ = unix.Close(fd)
		}
		return err
	}

	try("open-creat-4755", closeOK(unix.Open(at("open-suid"), unix.O_CREAT|unix.O_WRONLY, 0o4755)))
	try("openat-creat-2755", closeOK(unix.Openat(unix.AT_FDCWD, at("openat-sgid"), unix.O_CREAT|unix.O_WRONLY, 0o2755)))
	try("creat-6755", closeOK(creat(at("creat-suid"), 0o6755)))
	try("openat2-creat-4755", closeOK(unix.Openat2(unix.AT_FDCWD, at("openat2-suid"), &unix.OpenHow{Flags: unix.O_CREAT | unix.O_WRONLY, Mode: 0o4755})))
	try("tmpfile-linkat-4755", tmpfileLink(dir, at("tmpfile-suid")))

	fd := plain("fchmod-suid")
	try("fchmod-4755", unix.Fchmod(fd, 0o4755))
	_ = unix.Close(fd)
	_ = unix.Close(plain("fchmodat-sgid"))
	try("fchmodat-2755", unix.Fchmodat(unix.AT_FDCWD, at("fchmodat-sgid"), 0o2755, 0))
	_ = unix.Close(plain("chmod-suid"))
	try("chmod-6755", unix.Chmod(at("chmod-suid"), 0o6755))
	_ = unix.Close(plain("fchmodat2-suid"))
	try("fchmodat2-4755", fchmodat2(at("fchmodat2-suid"), 0o4755))
	try("mkdir-2755-then-chmod", mkdirSgid(at("sgid-dir")))

	try("mknod-reg-4755", unix.Mknod(at("mknod-suid"), unix.S_IFREG|0o4755, 0))
	try("mknodat-whiteout", unix.Mknodat(unix.AT_FDCWD, at("whiteout"), unix.S_IFCHR|0o600, 0))
	try("mknod-char-1-3", unix.Mknod(at("null-dev"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
	try("mknod-block-7-0", unix.Mknod(at("loop-dev"), unix.S_IFBLK|0o666, int(unix.Mkdev(7, 0))))
	try("io_uring_setup", ioUringSetup())
	try("ptrace-rewrite-chmod-4755", ptraceChmod(at("ptrace-suid")))

	// What must keep working: a FIFO, a socket node, a plain chmod.
	try("control-mkfifo", unix.Mkfifo(at("fifo"), 0o644))
	try("control-mknod-sock", unix.Mknod(at("sock-node"), unix.S_IFSOCK|0o644, 0))
	_ = unix.Close(plain("control-chmod"))
	try("control-chmod-0700", unix.Chmod(at("control-chmod"), 0o700))
}

func creat(p string, mode uint32) (int, error) {
	b, err := unix.BytePtrFromString(p)
	if err != nil {
		return -1, err
	}
	fd, _, e := unix.Syscall(unix.SYS_CREAT, uintptr(unsafe.Pointer(b)), uintptr(mode), 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

func fchmodat2(p string, mode uint32) error {
	b, err := unix.BytePtrFromString(p)
	if err != nil {
		return err
	}
	cwd := unix.AT_FDCWD
	_, _, e := unix.Syscall6(sysFchmodat2, uintptr(cwd), uintptr(unsafe.Pointer(b)), uintptr(mode), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// tmpfileLink makes an unnamed file with a setuid mode and links it in.
func tmpfileLink(dir, p string) error {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY, 0o4755)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Linkat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), unix.AT_FDCWD, p, unix.AT_SYMLINK_FOLLOW)
}

// mkdirSgid makes a directory asking for setgid, then sets it.
func mkdirSgid(p string) error {
	if err := unix.Mkdir(p, 0o2755); err != nil {
		return err
	}
	return unix.Chmod(p, 0o2755)
}

func ioUringSetup() error {
	var params [120]byte
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&params[0])), 0)
	if e != 0 {
		return e
	}
	_ = syscall.Close(int(fd))
	return nil
}
