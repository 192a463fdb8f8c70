package procgroup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// PipeDrain bounds how long Run waits for the output pipes to close after the group was
// killed; only a process that escaped the group can hold them longer.
const PipeDrain = 2 * time.Second

// DefaultKillGrace is the time between TERM and KILL when a Spec sets none; package backend
// gives it to every backend and the config as backend.DefaultKillGrace.
const DefaultKillGrace = time.Second

// Spec is one command to run.
type Spec struct {
	// Path is the program to run, already looked up; Args is its argv, Args[0] included.
	Path string
	Args []string
	Dir  string
	// Env is the complete environment; nil means an empty one, never Airlock's own.
	Env []string
	// Stdin is the command's standard input; nil means /dev/null.
	Stdin *os.File
	// Stdout and Stderr receive the output as it arrives.
	Stdout, Stderr io.Writer
	// Timeout ends the run when it passes; zero means no timeout.
	Timeout time.Duration
	// KillGrace is the time between TERM and KILL; zero means DefaultKillGrace.
	KillGrace time.Duration
	// Started, when set, is called once the process runs (the caller may close its copy of
	// a stdin pipe or start feeding it).
	Started func()
	// Track, when set, is called with the leader's PID (the group's ID) once it runs; the
	// function it returns is called after the leader exited and before it is reaped, so
	// that for as long as the PID is tracked it names this command and no other process.
	Track func(pid int) (untrack func())
	// Isolate, when set, adds to the process's attributes (namespaces to clone); Setsid
	// stays on, and no controlling terminal is taken.
	Isolate func(*syscall.SysProcAttr)
	// Restricted says that Start and Wait run on a thread that may signal only the
	// command's own processes (a kernel sandbox's restricted thread, whose Landlock domain
	// the command inherits). The sweep after the command, whose escapees may be another
	// command's, then runs on another thread — only when it finds something to kill.
	Restricted bool
	// Aside, when not nil, is a descriptor Wait watches beside the command's output and
	// exit (see [Aside]).
	Aside *Aside
}

// Aside is a descriptor that a Wait watches with the command in the same poll(2): the first
// time it is readable, hung up or in error, Wait calls Ready on its own thread and watches
// it no more. Wait never reads it. A resident helper that reads its requests on the thread
// a command waits on watches its request stream this way: it passes the reading to
// another thread only when something comes while the command runs, so that commands one
// after another cost no hand-over between threads.
type Aside struct {
	FD    int
	Ready func()
}

// Outcome is how a run ended.
type Outcome struct {
	// ExitCode is shell-style: 128+N for death by signal N.
	ExitCode  int
	TimedOut  bool
	Cancelled bool
	Duration  time.Duration
}

// Run starts the command in its own session and process group and waits for it. Cancelling ctx ends the
// run like a timeout does, marked Cancelled. The error is non-nil only when the command could
// not be started.
func Run(ctx context.Context, s Spec) (Outcome, error) {
	p, err := Start(s)
	if err != nil {
		return Outcome{}, err
	}
	return p.Wait(ctx), nil
}

// Process is a command Start started and Wait has not yet seen to its end. Every Process
// must be waited for: until then it is registered as a leader the sweep leaves alone.
type Process struct {
	proc    *os.Process // the leader, whose PID is its group's ID
	streams [2]stream   // stdout, stderr
	// writeEnds are this process's copies of the pipes' write ends, held until the leader
	// has exited (see the top of output.go).
	writeEnds [2]*os.File
	buf       []byte
	exitReady bool
	// leaderWakes counts the poll(2) rounds a descriptor ended until the leader's exit was
	// seen (tests read it): not those a look for dead orphans ended.
	leaderWakes int
	start       time.Time
	timeout     time.Duration
	grace       time.Duration
	untrack     func() // Spec.Track's, called once the leader exited, before it is reaped
	// restricted is Spec.Restricted.
	restricted bool
	// aside is Spec.Aside until it was ready.
	aside *Aside
	// reapAt is when the wait next looks for dead orphans, reapGap the time before it since
	// the last look (see reapWait).
	reapAt  time.Time
	reapGap time.Duration
}

// Start starts the command in its own session and process group, with only its standard
// streams, and returns at once. Only the fork and
// exec happen here: a caller that must start commands from a particular OS thread (the
// kernel sandbox's restricted threads, which commands inherit their restrictions from) needs
// that thread for Start alone, and Waits from any goroutine. The timeout counts from Start.
func Start(s Spec) (*Process, error) {
	env, err := environ(s.Env)
	if err != nil {
		return nil, err
	}
	grace := s.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	stdin := s.Stdin
	if stdin == nil {
		if stdin, err = devNull(); err != nil {
			return nil, fmt.Errorf("standard input: %w", err)
		}
	}
	attr := &syscall.SysProcAttr{}
	if s.Isolate != nil {
		s.Isolate(attr)
	}
	// A session of its own (which makes the command its process group's leader too) and
	// no controlling terminal: /dev/tty cannot be opened, and nothing the command does
	// reaches the terminal Airlock runs on (its input queue, its foreground group).
	attr.Setsid, attr.Setpgid, attr.Setctty, attr.Foreground, attr.Noctty = true, false, false, false, false
	w, streams, err := outputPipes(s.Stdout, s.Stderr)
	if err != nil {
		return nil, fmt.Errorf("output pipes: %w", err)
	}
	start := time.Now()
	p := &Process{streams: streams, writeEnds: w, start: start, timeout: s.Timeout, grace: grace, restricted: s.Restricted, aside: s.Aside,
		reapAt: start.Add(reapFirst), reapGap: reapFirst}
	// Start and registration happen under the lock a sweep takes, so that no sweep sees a
	// new leader before it is known as one. os.StartProcess, not os/exec: every descriptor
	// is a file already, and exec.Cmd would check the environment for duplicates again
	// for every command (a map of every variable: 9 µs and a page fault a command).
	leadersMu.Lock()
	markInheritedCloseOnExec()
	proc, err := os.StartProcess(s.Path, s.Args, &os.ProcAttr{Dir: s.Dir, Env: env, Files: []*os.File{stdin, w[0], w[1]}, Sys: attr})
	if err != nil {
		leadersMu.Unlock()
		p.closeStreams()
		return nil, err
	}
	leaders[proc.Pid] = true
	leadersMu.Unlock()
	p.proc = proc
	p.untrack = func() {}
	if s.Track != nil {
		p.untrack = s.Track(proc.Pid)
	}
	if s.Started != nil {
		s.Started()
	}
	refillPipes()
	return p, nil
}

// Wait waits for the command to end, killing its group when the timeout passes or ctx is
// done, then kills what it left in its group and, where this process is a subreaper, what
// escaped the group; it returns once the output pipes are drained (or PipeDrain has passed).
func (p *Process) Wait(ctx context.Context) Outcome {
	pgid := p.proc.Pid
	// The timeout and ctx start a kill only when they come: no goroutine waits beside every
	// command for an end that is nearly always its own.
	k := killer{pgid: pgid, grace: p.grace, done: make(chan struct{})}
	if p.timeout > 0 {
		t := time.AfterFunc(p.timeout-time.Since(p.start), func() { k.kill(&k.timedOut) })
		defer t.Stop()
	}
	stop := context.AfterFunc(ctx, func() { k.kill(&k.cancelled) })
	defer stop()

	// Wait for the leader to exit without reaping it, reading its output meanwhile: until it
	// is reaped its PID, and so the group ID, cannot be given to another process, so every
	// signal below reaches this command's group and nobody else's.
	p.waitLeader(pgid)
	p.closeWriteEnds()
	p.untrack()
	timedOut, cancelled := k.exited()
	// Whatever the command left running in its group dies with it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	state, _ := p.proc.Wait()
	leadersMu.Lock()
	delete(leaders, pgid)
	leadersMu.Unlock()
	// So does what escaped the group, where this process is a subreaper.
	if subreaper.Load() {
		if p.restricted {
			sweepElsewhere()
		} else {
			Sweep()
		}
	}
	// The pipes end when the last process holding them has: at once, unless one escaped.
	p.drainUntil(time.Now().Add(PipeDrain))
	return Outcome{
		ExitCode:  exitCode(state),
		TimedOut:  timedOut,
		Cancelled: cancelled,
		Duration:  time.Since(p.start),
	}
}

// killer kills a command's group once, on its timeout or its cancellation, unless the
// leader has exited first.
type killer struct {
	pgid  int
	grace time.Duration
	done  chan struct{} // closed when the leader has exited

	mu                  sync.Mutex
	over                bool // the leader exited: nothing starts any more
	fired               bool
	timedOut, cancelled bool
	killing             sync.WaitGroup
}

func (k *killer) kill(why *bool) {
	k.mu.Lock()
	if k.over || k.fired {
		k.mu.Unlock()
		return
	}
	k.fired, *why = true, true
	k.killing.Add(1)
	k.mu.Unlock()
	defer k.killing.Done()
	killGroup(k.pgid, k.grace, k.done)
}

// exited ends the killer once the leader has exited: a kill under way finishes its TERM and
// KILL (the group is still the command's: the leader is not reaped), none starts after. It
// reports why the command was killed, if it was.
func (k *killer) exited() (timedOut, cancelled bool) {
	k.mu.Lock()
	k.over = true
	timedOut, cancelled = k.timedOut, k.cancelled
	k.mu.Unlock()
	close(k.done)
	k.killing.Wait()
	return timedOut, cancelled
}

// waitExit blocks until process pid has exited, leaving it a zombie for cmd.Wait to reap.
func waitExit(pid int) {
	for {
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != unix.EINTR {
			return
		}
	}
}

// StartFailureCode is the shell's exit code for a command that could not be started: 127
// when the program does not exist, 126 otherwise.
func StartFailureCode(err error) int {
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, exec.ErrNotFound) {
		return 127
	}
	return 126
}

// killGroup sends TERM to the group, then KILL after the grace period unless the leader has
// exited by then.
func killGroup(pgid int, grace time.Duration, done <-chan struct{}) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// exitCode maps a finished process to a shell-style exit code: 128+N for death by signal N,
// -1 when it could not be waited for (ps is nil).
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
