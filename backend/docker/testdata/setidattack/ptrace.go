package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// chmodChild is the argument that makes this program the traced child of ptraceChmod.
const chmodChild = "chmod-child"

// The child's chmod must come from its main thread, the one PTRACE_TRACEME traces: a
// goroutine that locks its thread in init is main's, on the main thread, for good.
func init() {
	if len(os.Args) == 3 && os.Args[1] == chmodChild {
		runtime.LockOSThread()
	}
}

// ptraceChmod runs this program again as a traced child that makes p and chmods it to 0755,
// an allowed mode, and at the call's syscall-enter stop rewrites the mode to 04755: a
// profile checked only before the stop (as gVisor checks it) would then set the bit.
func ptraceChmod(p string) error {
	runtime.LockOSThread() // ptrace requests must come from the thread that traces
	defer runtime.UnlockOSThread()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, chmodChild, p)
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start a traced child: %w", err)
	}
	pid := cmd.Process.Pid
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		return fmt.Errorf("the child did not stop at its exec (%v): the ptrace request was refused", err)
	}
	if err := syscall.PtraceSetOptions(pid, syscall.PTRACE_O_TRACESYSGOOD); err != nil {
		return fmt.Errorf("ptrace setoptions: %w", err)
	}
	rewritten, entering := false, true
	for {
		if err := syscall.PtraceSyscall(pid, 0); err != nil {
			return fmt.Errorf("ptrace syscall: %w", err)
		}
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			return err
		}
		if ws.Exited() || ws.Signaled() {
			break
		}
		if !ws.Stopped() || ws.StopSignal() != syscall.SIGTRAP|0x80 {
			continue
		}
		if entering {
			var regs syscall.PtraceRegs
			if err := syscall.PtraceGetRegs(pid, &regs); err != nil {
				return fmt.Errorf("ptrace getregs: %w", err)
			}
			if isFchmodat(&regs) {
				setModeArg(&regs, unix.S_ISUID|0o755)
				if err := syscall.PtraceSetRegs(pid, &regs); err != nil {
					return fmt.Errorf("ptrace setregs: %w", err)
				}
				rewritten = true
			}
		}
		entering = !entering
	}
	if !rewritten {
		return errors.New("the child made no fchmodat to rewrite")
	}
	if ws.ExitStatus() != 0 {
		return fmt.Errorf("the rewritten chmod failed (child exit %d)", ws.ExitStatus())
	}
	return nil
}

// chmodChildMain is the traced child: make p, chmod it to 0755 (Go's Chmod is fchmodat).
func chmodChildMain(p string) {
	if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
		os.Exit(2)
	}
	if err := unix.Chmod(p, 0o755); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}
