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
	Error     string `json:"error,omitempty"`
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
	// graceAfterExit is how long background jobs may go on after the shell exits. It is
	// generous so that a loaded machine cannot make a run lose a job's log.
	graceAfterExit = 2 * time.Second
	maxStderr      = 64 << 10
)

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
	workers, baseUID := 2, 10000
	if len(os.Args) > 2 {
		w, err1 := strconv.Atoi(os.Args[1])
		u, err2 := strconv.Atoi(os.Args[2])
		if err1 != nil || err2 != nil || w < 1 || u < 1000 {
			fmt.Fprintf(os.Stderr, "driver: usage: driver WORKERS BASEUID\n")
			return 2
		}
		workers, baseUID = w, u
	}
	// Root is exempt from RLIMIT_NPROC; the shells, which run as one unprivileged user per
	// worker, inherit it, so that a fork bomb stops at its own limit instead of taking the
	// container's pids, and the driver's threads, with it.
	_ = syscall.Setrlimit(rlimitNPROC, &syscall.Rlimit{Cur: 128, Max: 128})
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

func run(sh shell, r Request, dir string, uid int) Result {
	res := Result{ID: r.ID, Shell: sh.name, Dir: dir + "/ws", Home: dir + "/home"}
	cmdText := r.Cmd
	if i := bytes.IndexByte(cmdText, 0); i >= 0 {
		cmdText, res.Truncated = cmdText[:i], true
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		res.Error = err.Error()
		return res
	}
	for _, d := range []string{res.Dir, res.Home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			res.Error = err.Error()
			return res
		}
		if err := os.Chown(d, uid, uid); err != nil {
			res.Error = err.Error()
			return res
		}
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		res.Error = err.Error()
		return res
	}
	defer os.RemoveAll(dir)
	var stderr capped
	c := &exec.Cmd{
		Path:   sh.path,
		Args:   append(append([]string(nil), sh.argv...), string(cmdText)),
		Dir:    res.Dir,
		Env:    append([]string{"HOME=" + res.Home, "PWD=" + res.Dir}, env...),
		Stderr: &stderr,
		SysProcAttr: &syscall.SysProcAttr{
			Setsid:     true,
			Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}},
		},
	}
	if err := c.Start(); err != nil {
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
		killSession(sid)
		res.Exit = exitCode(<-done)
	}
	// Background jobs may still be running: wait for the session to empty, then kill what is
	// left, so that nothing logs into a later run's file.
	deadline := time.Now().Add(graceAfterExit)
	for len(sessionMembers(sid)) > 0 {
		if time.Now().After(deadline) {
			res.TimedOut = true
			killSession(sid)
			time.Sleep(10 * time.Millisecond)
			if time.Now().After(deadline.Add(2 * time.Second)) {
				break
			}
			continue
		}
		time.Sleep(2 * time.Millisecond)
	}
	logPath := filepath.Join(logDir, strconv.Itoa(sid)+".log")
	if b, err := os.ReadFile(logPath); err == nil {
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
	} else if !errors.Is(err, os.ErrNotExist) {
		res.Error = "read log: " + err.Error()
	}
	_ = os.Remove(logPath)
	res.Stderr = stderr.buf.Bytes()
	res.Missing = notFound(sh.name, res.Stderr)
	return res
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

func killSession(sid int) {
	_ = syscall.Kill(-sid, syscall.SIGKILL)
	for _, pid := range sessionMembers(sid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
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
	for _, line := range diagnostics(stderr, []byte(prefix)) {
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
		// The message may have been written apart from its prefix, between another job's
		// prefix and message: "x: not foundy: not found" holds two names.
		parts := bytes.Split(rest, []byte(end))
		if len(parts) < 2 || len(parts[len(parts)-1]) > 0 {
			continue
		}
		for _, name := range parts[:len(parts)-1] {
			if bytes.Contains(name, []byte("not found")) {
				// Pieces of two diagnostics written into each other at a finer grain
				// ("sh: not found0"): no shell looked that name up.
				continue
			}
			out = append(out, append([]byte(nil), name...))
		}
	}
	return out
}

// diagnostics splits stderr into the shell's diagnostics: lines, and inside a line each
// place where the shell's prefix starts again. Background jobs of one run write at once,
// so one line may hold "dash: 1: dash: 1: x: not found" or "x: not founddash: 1: y: not
// found"; each diagnostic starts with the prefix.
func diagnostics(stderr, prefix []byte) [][]byte {
	var out [][]byte
	for _, line := range bytes.Split(stderr, []byte{'\n'}) {
		for len(line) > 0 {
			next := bytes.Index(line[min(len(prefix), len(line)):], prefix)
			if next < 0 {
				out = append(out, line)
				break
			}
			next += len(prefix)
			out = append(out, line[:next])
			line = line[next:]
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

// capped keeps the first maxStderr bytes written to it and drops the rest.
type capped struct{ buf bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := maxStderr - c.buf.Len(); room > 0 {
		if len(p) > room {
			c.buf.Write(p[:room])
		} else {
			c.buf.Write(p)
		}
	}
	return len(p), nil
}
