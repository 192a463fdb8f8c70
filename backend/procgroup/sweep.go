package procgroup

import (
	"bytes"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// A process that calls setsid (or setpgid) leaves its command's process group, so the group
// kill misses it. Made a child subreaper, this process inherits such orphans when their
// parents die, and Sweep finds them: every child of ours that is not the leader of a command
// Run is waiting for escaped its group, and is killed with everything in its own group and
// session.

var (
	subreaper atomic.Bool
	// leadersMu guards the set of command leaders; Run holds it around Start and its
	// registration, Sweep while it scans and kills.
	leadersMu sync.Mutex
	leaders   = map[int]bool{}
)

// EnableSubreaper makes this process the reaper of orphans its commands leave behind and
// turns on the sweep that Run does after every command. It affects the whole process: call
// it from a process whose only children are the commands it runs (airlock agent).
func EnableSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return err
	}
	if subreaper.Swap(true) {
		return nil
	}
	// Orphans that exit become our zombies, and a zombie holds its PID: under a pids limit
	// (a fork bomb in a container) they would starve this process of threads. Reap them as
	// they die, as an init would.
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGCHLD)
	go func() {
		for range ch {
			reapZombies()
		}
	}()
	return nil
}

// reapZombies reaps children that have exited and are not a running command's leader (whose
// status Run's own wait collects).
func reapZombies() {
	leadersMu.Lock()
	defer leadersMu.Unlock()
	for _, c := range children(os.Getpid()) {
		if c.zombie && !leaders[c.pid] {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(c.pid, &ws, syscall.WNOHANG, nil)
		}
	}
}

// Sweep kills and reaps every child of this process that is not a running command's leader,
// with its process group and session, until none is left (killing one re-parents its own
// children here). It returns how many it killed.
func Sweep() int {
	leadersMu.Lock()
	defer leadersMu.Unlock()
	killed := 0
	self := os.Getpid()
	for round := 0; round < 16; round++ {
		found := 0
		for _, c := range children(self) {
			pid := c.pid
			if leaders[pid] {
				continue
			}
			found++
			_ = syscall.Kill(-pid, syscall.SIGKILL) // its group, if it leads one
			_ = syscall.Kill(pid, syscall.SIGKILL)
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		}
		if found == 0 {
			break
		}
		killed += found
	}
	return killed
}

// child is a process whose parent is this one.
type child struct {
	pid    int
	zombie bool
}

// children lists the processes whose parent is ppid, from /proc.
func children(ppid int) []child {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []child
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := bytes.Fields(stat[i+1:])
		if len(fields) < 2 {
			continue
		}
		if p, err := strconv.Atoi(string(fields[1])); err == nil && p == ppid {
			out = append(out, child{pid: pid, zombie: string(fields[0]) == "Z"})
		}
	}
	return out
}
