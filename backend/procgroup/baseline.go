package procgroup

import (
	"bytes"
	"os/exec"
	"syscall"
	"time"
)

// TimeForkExec times what a command costs without Airlock: a fork/exec of `sh -c true` in
// a process group of its own with its output captured, as the backends start one. It is the
// raw alternative `airlock bench` and the backends' benchmarks time beside their own figure.
func TimeForkExec() (time.Duration, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command("/bin/sh", "-c", "true")
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	start := time.Now()
	err := RunCmd(cmd) // cmd.Run, but not taken for an escapee where we are a subreaper
	return time.Since(start), err
}
