package procgroup

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

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
// it from a process whose only children are the commands it runs (airlock helper).
func EnableSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return err
	}
	if subreaper.Swap(true) {
		return nil
	}
	// Opened now, from whatever thread enables the subreaper: a sweep that only looks
	// (sweepElsewhere) may run on a restricted thread that could not open it.
	leadersMu.Lock()
	_, _ = children()
	leadersMu.Unlock()
	return nil
}

// Orphans that exit become our zombies, and a zombie holds its PID: under a pids limit (a
// fork bomb in a container) they would starve this process of threads. An orphan exists only
// while a command runs (the sweep after each command kills the rest), so the commands' own
// waits reap them, as an init would: a wait looks reapFirst after its command started, then
// after twice as long each time it found no dead orphan (up to reapMost), and reapFirst
// after again once it found one. A command shorter than reapFirst (nearly every one) never
// looks; one that leaves orphans dying is looked after every reapFirst.
//
// Not SIGCHLD through os/signal, as an init would: the runtime hands each signal to a
// goroutine of its own and that one to the receiver's, which costs five context switches a
// command (16 against 10.5 a command back to back on one core), for the one command in many
// that leaves an orphan.
const (
	reapFirst = 10 * time.Millisecond
	reapMost  = time.Second
)

// reapWait looks for dead orphans when it is time to (reapOrphans), sets when to look next,
// and returns how long a wait on p may block until then, in milliseconds for poll(2): -1
// (no limit) where this process is no subreaper. A wait calls it before every poll(2).
func (p *Process) reapWait() int {
	if !subreaper.Load() {
		return -1
	}
	now := time.Now()
	if !now.Before(p.reapAt) {
		if reapOrphans(p.restricted) > 0 {
			p.reapGap = reapFirst
		} else {
			p.reapGap = min(2*p.reapGap, reapMost)
		}
		p.reapAt = now.Add(p.reapGap)
	}
	return int((p.reapAt.Sub(now) + time.Millisecond - 1) / time.Millisecond)
}

// reapOrphans reaps the dead orphans (reapZombies) and says how many it reaped. On a
// restricted thread it looks only through the children file EnableSubreaper opened; when
// that never opened, the looking (which would open files) is left to another goroutine, and
// it reports none.
func reapOrphans(restricted bool) int {
	if restricted {
		leadersMu.Lock()
		opened := mainChildrenFile != nil
		leadersMu.Unlock()
		if !opened {
			go reapZombies()
			return 0
		}
	}
	return reapZombies()
}

// reapZombies reaps children that have exited and are not a running command's leader (whose
// status Run's own wait collects), and says how many it reaped. A child still running is
// left alone by WNOHANG.
func reapZombies() (reaped int) {
	leadersMu.Lock()
	defer leadersMu.Unlock()
	pids, _ := children()
	for _, pid := range pids {
		if !leaders[pid] {
			var ws syscall.WaitStatus
			if got, _ := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); got == pid {
				reaped++
			}
		}
	}
	return reaped
}

// Sweep kills and reaps every child of this process that is not a running command's leader,
// with its process group and session, until none is left (killing one re-parents its own
// children here). It returns how many it killed.
func Sweep() int {
	leadersMu.Lock()
	defer leadersMu.Unlock()
	killed := 0
	// A children file read while an earlier entry leaves can miss a later one (proc(5)).
	// Under this lock no orphan is reaped, and with no command running none of our children
	// is either; otherwise a round that finds nothing is read once more before the sweep
	// ends.
	confirm := 1
	if len(leaders) > 0 {
		confirm = 2
	}
	for round, empty := 0, 0; round < 16 && empty < confirm; round++ {
		found := 0
		pids, _ := children()
		for _, pid := range pids {
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
			empty++
			continue
		}
		empty = 0
		killed += found
	}
	return killed
}

// sweepElsewhere is Sweep for a caller on a restricted thread (Spec.Restricted): it looks
// for escapees as Sweep does, through the children file EnableSubreaper opened, and only
// when it finds one (or cannot look) has Sweep run on another goroutine, which is never on a
// restricted thread, and waits for it. Nearly every command leaves nothing behind, and is
// then answered without waking another thread.
func sweepElsewhere() {
	if !escapees() {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Sweep()
	}()
	<-done
}

// escapees reports whether a child of this process that is not a running command's leader
// is there, or whether it cannot tell: reading the same children file as often as Sweep does
// before it concludes there is none.
func escapees() bool {
	leadersMu.Lock()
	defer leadersMu.Unlock()
	if mainChildrenFile == nil {
		return true // never opened: the fallback would open files from this thread
	}
	rounds := 1
	if len(leaders) > 0 {
		rounds = 2
	}
	for range rounds {
		pids, ok := children()
		if !ok {
			return true
		}
		for _, pid := range pids {
			if !leaders[pid] {
				return true
			}
		}
	}
	return false
}

// childrenFiles is whether /proc/PID/task/TID/children exists (Linux 3.5 and later with
// CONFIG_PROC_CHILDREN, as Debian's and most distributions' kernels are built).
var childrenFiles = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children")
	return err == nil
})

// children lists the children of this process that can be orphans it was handed as a
// subreaper: those on its main thread's children file. The kernel gives an orphan to the
// first live thread of the subreaper's thread group, which is the main thread (Go never ends
// it), so reading that one file costs the same however many threads, children or other
// processes there are. Children this process forked itself sit on the forking thread's file
// and are not looked at: they are the commands Run waits for, or another part of the
// program's, not escapees. Without children files, every process's stat is read instead.
//
// The file is opened once and read again from offset 0 each time (a read at offset 0
// restarts a seq_file's walk, so every read is current): opening a /proc path costs as much
// as reading it. Callers hold leadersMu, which guards the file and its buffer.
//
// ok is false when the file could be read only in part (or not at all): the list may then
// miss some.
func children() (pids []int, ok bool) {
	if !childrenFiles() {
		return scanChildren(os.Getpid()), true
	}
	if mainChildrenFile == nil {
		f, err := os.Open("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children")
		if err != nil {
			return scanChildren(os.Getpid()), true
		}
		mainChildrenFile = f
	}
	data := mainChildrenBuf[:0]
	ok = true
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := mainChildrenFile.ReadAt(data[len(data):cap(data)], int64(len(data)))
		data = data[:len(data)+n]
		if err != nil && !errors.Is(err, io.EOF) {
			ok = false
		}
		if err != nil || n == 0 {
			break
		}
	}
	mainChildrenBuf = data
	for _, field := range bytes.Fields(data) {
		if pid, err := strconv.Atoi(string(field)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, ok
}

// mainChildrenFile is the main thread's children file, opened by the first read, and
// mainChildrenBuf the buffer it is read into; leadersMu guards both.
var (
	mainChildrenFile *os.File
	mainChildrenBuf  = make([]byte, 0, 4096)
)

// scanChildren lists the processes whose parent is ppid by reading every /proc/PID/stat: the
// fallback where children files do not exist.
func scanChildren(ppid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
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
			out = append(out, pid)
		}
	}
	return out
}

// RunCmd runs cmd to its end as a child that the sweep and the orphan reaper leave alone,
// for a process that is a subreaper but starts a child of its own outside [Run] (the raw
// fork/exec `airlock bench` times beside a backend's).
func RunCmd(cmd *exec.Cmd) error {
	leadersMu.Lock()
	if err := cmd.Start(); err != nil {
		leadersMu.Unlock()
		return err
	}
	pid := cmd.Process.Pid
	leaders[pid] = true
	leadersMu.Unlock()
	err := cmd.Wait()
	leadersMu.Lock()
	delete(leaders, pid)
	leadersMu.Unlock()
	return err
}
