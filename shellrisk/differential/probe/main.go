// Command probe is the one static program inside the differential test image. Its name
// decides what it does:
//
//   - as "driver" it reads commands (JSON lines on stdin), runs each under every real shell
//     in the image, each run in a session of its own with a fresh log, a fresh working
//     directory and a time limit, and writes one JSON line per (command, shell) on stdout;
//   - as "idle" it is the container's main process and only waits to be stopped;
//   - under any other name it is a recorder: every program on PATH in the image is a link to
//     it. It appends its argv, byte for byte, to the log of the session it runs in and
//     exits 0 without doing anything else.
//
// The log is keyed by the session id: the driver starts each shell with setsid, and no shell
// built-in can leave the session, so everything the shell runs — pipelines, background jobs,
// job-control process groups — logs to that run's file, and runs can go in parallel.
//
// A run is over when its shell has exited and its background jobs have finished, or had
// their time; whatever is left of it is then killed as its worker's user (killUser), and
// only then are its log and its standard error read. Standard error is read one write at a
// time with the writer's pid (stderr.go), so that diagnostics of jobs writing at once
// never run into each other.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// logDir holds one log per session; the image mounts a tmpfs there.
const logDir = "/rec"

// Entry is one line of a recorder log.
type Entry struct {
	// Exe is the path the shell executed (from /proc/self/exe, so a hard link's own name):
	// argv[0] is only what the shell chose to pass (exec -a sets it).
	Exe []byte `json:"exe"`
	// Argv is the argument vector exactly as the shell passed it ([]byte keeps every byte:
	// encoding/json writes it as base64).
	Argv [][]byte `json:"argv"`
}

// Request is one command for the driver.
type Request struct {
	ID  int    `json:"id"`
	Cmd []byte `json:"cmd"`
	// Shells, when set, are the only shells to run the command under.
	Shells []string `json:"shells,omitempty"`
}

// Result is what one shell did with one command.
type Result struct {
	ID    int    `json:"id"`
	Shell string `json:"shell"`
	// Dir and Home are the run's working and home directories.
	Dir  string `json:"dir"`
	Home string `json:"home"`
	// Runs are the programs the shell executed, in the order their recorders logged.
	Runs []Entry `json:"runs"`
	// Missing are the command names the shell looked up and did not find, read from its
	// "not found" diagnostics: a real machine may have them.
	Missing  [][]byte `json:"missing,omitempty"`
	Exit     int      `json:"exit"`
	TimedOut bool     `json:"timed_out,omitempty"`
	// Truncated is true when the command held a NUL byte: like every C program given it
	// through execve or sshd, the shell sees only the part before the first NUL.
	Truncated bool   `json:"truncated,omitempty"`
	Stderr    []byte `json:"stderr,omitempty"`
	// Effects are what the run did to files, in effects mode only (see effects.go).
	Effects []Effect `json:"effects,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// shell is one real shell in the image and how the backends start it.
type shell struct {
	name string
	path string
	argv []string // argv before the command text
}

var shells = []shell{
	{"bash", "/shells/bash", []string{"bash", "-c"}},
	// bash started as sh runs in POSIX mode, as /bin/sh does on some distributions: among
	// other things it then expands aliases without being interactive.
	{"bash-sh", "/shells/bash", []string{"sh", "-c"}},
	{"dash", "/shells/dash", []string{"dash", "-c"}},
	{"busybox", "/shells/busybox", []string{"sh", "-c"}},
}

// env is the whole environment each shell starts with; HOME is set per run.
var env = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"LC_ALL=C",
	"USER=nobody",
	"LOGNAME=nobody",
	"SHELL=/bin/sh",
}

// The driver runs as root in the container (with the few capabilities it needs to manage
// the runs: see the test's container spec); each worker's shells run as a user of their
// own (BASEUID+worker), without any capability, so that kill -1 or a fork bomb in one run
// cannot reach the driver or a run in another worker.
const (
	rlimitNPROC = 6 // RLIMIT_NPROC on linux

	runTimeout = 2 * time.Second
	// startPatience is how long a fork refused for want of a process slot is retried.
	startPatience = 30 * time.Second
	// graceAfterExit is how long background jobs may go on after the shell exits. It is
	// generous so that a loaded machine cannot make a run lose a job's log.
	graceAfterExit = 2 * time.Second
	maxStderr      = 64 << 10
)

// init keeps the main goroutine on the main thread for good, so that killUser can never
// run there: a goroutine that ends locked to the main thread leaves the thread alive, and
// the main thread's credentials are the ones the kernel checks when anything signals the
// driver.
func init() { runtime.LockOSThread() }

func main() {
	switch filepath.Base(os.Args[0]) {
	case "driver":
		os.Exit(drive())
	case "idle":
		idle()
	default:
		record()
	}
}

// idle is the container's process 1: it reaps the orphans that every background job whose
// shell has exited becomes (without it they would stay zombies and use up the pids limit)
// and exits when the container is stopped.
func idle() {
	c := make(chan os.Signal, 16)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range c {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}

func record() {
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, 0, 0, 0)
	if errno != 0 {
		os.Exit(0)
	}
	argv := make([][]byte, len(os.Args))
	for i, a := range os.Args {
		argv[i] = []byte(a)
	}
	exe, _ := os.Readlink("/proc/self/exe")
	line, err := json.Marshal(Entry{Exe: []byte(exe), Argv: argv})
	if err != nil {
		os.Exit(0)
	}
	f, err := os.OpenFile(filepath.Join(logDir, strconv.Itoa(int(sid))+".log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
	if err != nil {
		fmt.Fprintf(os.Stderr, "recorder: %v\n", err)
		os.Exit(0)
	}
	// One write per entry: O_APPEND keeps lines whole when a pipeline's programs log at once.
	_, _ = f.Write(append(line, '\n'))
	_ = f.Close()
	os.Exit(0)
}

func drive() int {
	// driver WORKERS BASEUID: the base is chosen per container by the test, since
	// RLIMIT_NPROC counts a user's processes on the whole host, not per container.
	// driver WORKERS BASEUID effects: the effects mode (effects.go), one worker only.
	workers, baseUID := 2, 10000
	if len(os.Args) > 2 {
		w, err1 := strconv.Atoi(os.Args[1])
		u, err2 := strconv.Atoi(os.Args[2])
		effectsMode = len(os.Args) == 4 && os.Args[3] == "effects"
		if err1 != nil || err2 != nil || w < 1 || u < 1000 || len(os.Args) > 4 || len(os.Args) == 4 && !effectsMode || effectsMode && w != 1 {
			fmt.Fprintf(os.Stderr, "driver: usage: driver WORKERS BASEUID [effects]\n")
			return 2
		}
		workers, baseUID = w, u
	}
	if effectsMode {
		shells = effectShells
		if err := makeTemplate(); err != nil {
			fmt.Fprintf(os.Stderr, "driver: scratch tree: %v\n", err)
			return 2
		}
	}
	// Root is exempt from RLIMIT_NPROC; the shells, which run as one unprivileged user per
	// worker, inherit it, so that a fork bomb stops at its own limit instead of taking the
	// container's pids, and the driver's threads, with it.
	_ = syscall.Setrlimit(rlimitNPROC, &syscall.Rlimit{Cur: 128, Max: 128})
	// killUser makes a thread of the driver the run's user for a moment; not dumpable, the
	// driver cannot be traced by that user meanwhile.
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); e != 0 {
		fmt.Fprintf(os.Stderr, "driver: PR_SET_DUMPABLE: %v\n", e)
		return 2
	}
	if err := os.MkdirAll("/tmp/w", 0o711); err != nil {
		fmt.Fprintf(os.Stderr, "driver: %v\n", err)
		return 2
	}
	reqs := make(chan Request)
	out := json.NewEncoder(os.Stdout)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for r := range reqs {
				for _, sh := range shells {
					if len(r.Shells) > 0 && !slices.Contains(r.Shells, sh.name) {
						continue
					}
					n++
					res := run(sh, r, fmt.Sprintf("/tmp/w/%d-%d", w, n), baseUID+w)
					mu.Lock()
					_ = out.Encode(res)
					mu.Unlock()
				}
			}
		}()
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r Request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			fmt.Fprintf(os.Stderr, "driver: bad request: %v\n", err)
			return 2
		}
		reqs <- r
	}
	close(reqs)
	wg.Wait()
	return 0
}

// startShell starts sh with the command as the worker's user, its stderr going to the log
// it returns. A fork refused with EAGAIN is tried again until startPatience has passed: the
// container's process limit is shared by the workers, and another worker's fork bomb holds
// it until that run's kill has reaped it — a wait, not a result of this run.
func startShell(sh shell, cmdText []byte, res Result, uid int) (*exec.Cmd, *stderrLog, error) {
	deadline := time.Now().Add(startPatience)
	for {
		stderr, diag, err := newStderr()
		if err != nil {
			return nil, nil, err
		}
		c := &exec.Cmd{
			Path:   sh.path,
			Args:   append(append([]string(nil), sh.argv...), string(cmdText)),
			Dir:    res.Dir,
			Env:    runEnv(res),
			Stderr: stderr,
			SysProcAttr: &syscall.SysProcAttr{
				Setsid:     true,
				Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}},
			},
		}
		err = c.Start()
		_ = stderr.Close()
		if err == nil {
			return c, diag, nil
		}
		_, _ = diag.wait(time.Now())
		if !errors.Is(err, syscall.EAGAIN) || time.Now().After(deadline) {
			return nil, nil, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func run(sh shell, r Request, dir string, uid int) Result {
	res := Result{ID: r.ID, Shell: sh.name, Dir: dir + "/ws", Home: dir + "/home"}
	cmdText := r.Cmd
	if i := bytes.IndexByte(cmdText, 0); i >= 0 {
		cmdText, res.Truncated = cmdText[:i], true
	}
	if err := prepare(dir, uid); err != nil {
		res.Error = err.Error()
		return res
	}
	defer os.RemoveAll(dir)
	var rec *effectRecorder
	if effectsMode {
		var err error
		if rec, err = startEffects(dir); err != nil {
			res.Error = err.Error()
			return res
		}
		defer rec.close()
	}
	c, diag, err := startShell(sh, cmdText, res, uid)
	if err != nil {
		res.Error = "start: " + err.Error()
		return res
	}
	sid := c.Process.Pid
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	timer := time.NewTimer(runTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		res.Exit = exitCode(err)
	case <-timer.C:
		res.TimedOut = true
		if err := killUser(uid); err != nil {
			res.Error = err.Error()
		}
		res.Exit = exitCode(<-done)
	}
	// Background jobs may still be running: give them time to finish.
	deadline := time.Now().Add(graceAfterExit)
	for len(sessionMembers(sid)) > 0 {
		if time.Now().After(deadline) {
			res.TimedOut = true
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	// Then kill what is left, whether that scan saw it or not: a snapshot of /proc can
	// miss every process of a fork bomb whose processes fork and exit faster than it
	// reads them, and so can a kill of each pid it found. One kill(-1) as the worker's
	// user cannot (see killUser), so nothing of this run outlives it to log into a later
	// run, or to hold the worker's RLIMIT_NPROC.
	if err := killUser(uid); err != nil {
		res.Error = err.Error()
	}
	// Standard error ends when the last process holding it is gone; by then nothing of
	// the run can write its log either.
	var serr error
	res.Stderr, serr = diag.wait(time.Now().Add(5 * time.Second))
	if serr != nil {
		res.Error = serr.Error()
	}
	if rec != nil {
		var err error
		if res.Effects, err = rec.finish(); err != nil {
			res.Error = err.Error()
		}
	}
	readRunLog(sid, &res)
	res.Missing = notFound(sh.name, res.Stderr)
	return res
}

// readRunLog adds to res the entries the run's shell wrote to its log (session sid), and
// removes the log.
func readRunLog(sid int, res *Result) {
	logPath := filepath.Join(logDir, strconv.Itoa(sid)+".log")
	defer os.Remove(logPath)
	b, err := os.ReadFile(logPath)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			res.Error = "read log: " + err.Error()
		}
		return
	}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		var e Entry
		if err := json.Unmarshal(line, &e); err != nil {
			res.Error = "bad log line: " + err.Error()
			continue
		}
		res.Runs = append(res.Runs, e)
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// sessionMembers lists the processes whose session id is sid.
func sessionMembers(sid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session …; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 4 || f[0] == "Z" {
			continue
		}
		if s, err := strconv.Atoi(f[3]); err == nil && s == sid {
			out = append(out, pid)
		}
	}
	return out
}

// killUser sends SIGKILL to every process of uid in the container. Each worker's shells
// run as a user of their own, one run at a time, so those are exactly what is left of the
// worker's current run, whatever session or process group they are in.
//
// kill(-1) reaches every process the caller may signal, and the kernel makes it whole:
// it walks the processes under the lock that fork needs to add one, and a fork under way
// gives the signal to its child as well. So it is sent from a thread of the driver that
// has become uid (credentials are per thread in Linux): without CAP_KILL in effect, that
// thread may signal only uid's processes. The goroutine never unlocks its thread, so
// the runtime ends that thread with it and no other goroutine runs as uid.
func killUser(uid int) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if syscall.Gettid() == os.Getpid() {
			// See init: this thread would stay uid's and let uid's processes signal
			// (kill -9 -1) the driver.
			runtime.UnlockOSThread()
			errc <- errors.New("kill the run: on the main thread")
			return
		}
		u := uintptr(uid)
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, u, u, u); e != 0 {
			errc <- fmt.Errorf("kill the run: setresuid %d: %w", uid, e)
			return
		}
		all := -1
		if _, _, e := syscall.RawSyscall(syscall.SYS_KILL, uintptr(all), uintptr(syscall.SIGKILL), 0); e != 0 && e != syscall.ESRCH {
			errc <- fmt.Errorf("kill the run: kill(-1) as %d: %w", uid, e)
			return
		}
		errc <- nil
	}()
	return <-errc
}

// notFound reads the names a shell could not find from its diagnostics. Each shell has
// one fixed form (with an exec: variant); bash's "No such file or directory" is left out
// because bash says the same of a redirection it cannot open (dash and busybox, which say
// "not found" of a missing path too, cover paths).
//
//	bash: line 1: NAME: command not found     bash: line 1: exec: NAME: not found
//	dash: 1: NAME: not found                  dash: 1: exec: NAME: not found
//	sh: NAME: not found                       sh: exec: line 0: NAME: not found
//
// dash and busybox also name the built-in whose code looked the name up, eval (nested
// too) or hash: "dash: 2: eval: NAME: not found", "sh: eval: line 1: NAME: not found",
// "dash: 1: hash: NAME: not found". That prefix is the diagnostic's, not the name's.
//
// stderr holds each process's writes together (see stderrLog), so every diagnostic is a
// whole line of its own even when background jobs wrote at once.
func notFound(shellName string, stderr []byte) [][]byte {
	prefix, suffix := "sh: ", ": not found"
	switch shellName {
	case "bash":
		prefix, suffix = "bash: ", ": command not found"
	case "bash-sh":
		suffix = ": command not found"
	case "dash":
		prefix = "dash: "
	}
	var out [][]byte
	for _, line := range bytes.Split(stderr, []byte{'\n'}) {
		rest, ok := bytes.CutPrefix(line, []byte(prefix))
		if !ok {
			continue
		}
		rest = cutLineNumber(rest)
		if shellName == "dash" || shellName == "busybox" {
			for {
				r, ok := bytes.CutPrefix(rest, []byte("eval: "))
				if !ok {
					r, ok = bytes.CutPrefix(rest, []byte("hash: "))
				}
				if !ok {
					break
				}
				rest = cutLineNumber(r)
			}
		}
		end := suffix
		if r, ok := bytes.CutPrefix(rest, []byte("exec: ")); ok {
			rest, end = cutLineNumber(r), ": not found"
		}
		if name, ok := bytes.CutSuffix(rest, []byte(end)); ok {
			out = append(out, append([]byte(nil), name...))
		}
	}
	return out
}

// cutLineNumber removes a leading "line N: " or "N: ".
func cutLineNumber(b []byte) []byte {
	r := bytes.TrimPrefix(b, []byte("line "))
	i := 0
	for i < len(r) && r[i] >= '0' && r[i] <= '9' {
		i++
	}
	if i > 0 && bytes.HasPrefix(r[i:], []byte(": ")) {
		return r[i+2:]
	}
	return b
}
