// Command helperattack tries, from inside the container as a command, every way it knows to
// end, stop or take over the resident helper: it finds the helper's processes by their
// command line and sends SIGKILL by kill, tgkill on each thread, pidfd_open and a /proc
// directory opened as a pidfd, then tries ptrace, writing /proc/PID/mem, process_vm_writev
// and prlimit. It prints one line per try. The Docker backend's tests run it and then check
// that the next call still works.
package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	pids := helperPIDs()
	if len(pids) == 0 {
		fmt.Println("no helper process found")
		os.Exit(2)
	}
	for _, pid := range pids {
		fmt.Println("helper pid", pid)
		try := func(name string, err error) { fmt.Printf("%s %d: %v\n", name, pid, errString(err)) }
		try("prlimit-nofile-0", unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{}, nil))
		try("ptrace-attach", unix.PtraceAttach(pid))
		try("proc-mem-write", writeMem(pid))
		try("process_vm_writev", vmWrite(pid))
		try("pidfd_send_signal", pidfdKill(pid))
		try("proc-dir-pidfd", procDirKill(pid))
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, task := range tasks {
			tid, _ := strconv.Atoi(task.Name())
			try("tgkill-"+task.Name(), unix.Tgkill(pid, tid, unix.SIGKILL))
			try("kill-tid-"+task.Name(), unix.Kill(tid, unix.SIGKILL))
		}
		try("kill-stop", unix.Kill(pid, unix.SIGSTOP))
		try("kill", unix.Kill(pid, unix.SIGKILL))
	}
	fmt.Println("kill-all", errString(unix.Kill(-1, unix.SIGKILL)))
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// helperPIDs are the processes running "airlock helper": the helper and, for a dynamically
// linked helper, its loader's process (the same).
func helperPIDs() []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if slices.Contains(strings.Split(string(b), "\x00"), "helper") && strings.Contains(string(b), "/.airlock/helper-") {
			out = append(out, pid)
		}
	}
	return out
}

func writeMem(pid int) error {
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", pid), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

func vmWrite(pid int) error {
	b := []byte{0}
	local := []unix.Iovec{{Base: &b[0], Len: 1}}
	remote := []unix.RemoteIovec{{Base: uintptr(0x400000), Len: 1}}
	_, err := unix.ProcessVMWritev(pid, local, remote, 0)
	return err
}

func pidfdKill(pid int) error {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
}

// procDirKill opens /proc/PID, which the kernel takes as a pidfd.
func procDirKill(pid int) error {
	fd, err := unix.Open(fmt.Sprintf("/proc/%d", pid), unix.O_DIRECTORY|unix.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, _, e := unix.Syscall6(unix.SYS_PIDFD_SEND_SIGNAL, uintptr(fd), uintptr(unix.SIGKILL), uintptr(unsafe.Pointer(nil)), 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}
