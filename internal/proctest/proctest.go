package proctest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Record is shell text that prints the PID in variable v (without the `$`, e.g. "!" or
// "$") with its PID namespace: "PID pid:[INODE]".
func Record(v string) string {
	return `echo "$` + v + ` $(readlink /proc/self/ns/pid)"`
}

// Alive reports whether the process recorded as "PID pid:[INODE]" (see [Record]) still
// runs (a zombie counts as gone), and its host PID when found. Several records may be
// given, one per line; Alive reports the first one that still runs.
func Alive(recorded string) (hostPID int, alive bool) {
	for _, line := range strings.Split(strings.TrimSpace(recorded), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		if pid, ok := find(f[0], f[1]); ok {
			return pid, true
		}
	}
	return 0, false
}

// find scans the host's /proc for a live process in namespace ns whose PID there is nsPID.
func find(nsPID, ns string) (int, bool) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if link, err := os.Readlink(d + "/ns/pid"); err != nil || link != ns {
			continue
		}
		status, err := os.ReadFile(d + "/status")
		if err != nil {
			continue
		}
		var ids []string
		state := ""
		for _, l := range strings.Split(string(status), "\n") {
			switch {
			case strings.HasPrefix(l, "NSpid:"):
				ids = strings.Fields(strings.TrimPrefix(l, "NSpid:"))
			case strings.HasPrefix(l, "State:"):
				state = strings.TrimSpace(strings.TrimPrefix(l, "State:"))
			}
		}
		if len(ids) == 0 || ids[len(ids)-1] != nsPID || strings.HasPrefix(state, "Z") {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		return pid, true
	}
	return 0, false
}
