package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/helper"
)

// pipeDrain bounds how long Exec waits for a killed command's output stream to end; only a
// process that left the command's process group can hold it longer.
const pipeDrain = 2 * time.Second

// errNeedsRepair marks an exec that failed because the container is gone or stopped; the
// command did not start, so it is safe to repair the container and run it again.
var errNeedsRepair = errors.New("container not running")

// Exec runs req in the container: through the helper when it runs, else with one docker
// exec.
func (e *Env) Exec(ctx context.Context, req backend.Request) (backend.Result, error) {
	if err := req.Validate(); err != nil {
		return backend.Result{}, err
	}
	if e.rep.Closed() {
		return backend.Result{}, backend.ErrClosed
	}
	dir, err := backend.WorkDir(e.cfg.Workdir, req.Dir)
	if err != nil {
		return backend.Result{}, err
	}
	timeout, capBytes := req.Effective(e.cfg.DefaultTimeout, e.cfg.MaxOutputBytes)
	env := e.policy.Build(hostEnv(), req.Env)
	egressSocket, releaseEgress, err := e.callEgress(ctx)
	if err != nil {
		return backend.Result{}, err
	}
	defer releaseEgress()

	notes, err := e.ready(ctx)
	if err != nil {
		return backend.Result{}, err
	}
	for attempt := 0; ; attempt++ {
		e.mu.Lock()
		mode, a, id, base := e.mode, e.resident, e.containerID, e.containerEnv
		e.mu.Unlock()
		var res backend.Result
		if mode == ModeHelper {
			res, err = a.client.Exec(ctx, helper.Request{
				Argv: req.Argv, Command: req.Command, Dir: dir, Workspace: e.cfg.Workdir,
				Env: helper.MergeEnv(base, env), Stdin: req.Stdin, Timeout: timeout,
				KillGrace: e.cfg.KillGrace, MaxOutputBytes: capBytes,
				Stdout: req.Stdout, Stderr: req.Stderr, EgressSocket: egressSocket,
			})
			if errors.Is(err, backend.ErrUnavailable) && !errors.Is(err, backend.ErrClosed) {
				said := ""
				if msg := strings.TrimSpace(string(a.stderr.Bytes())); msg != "" {
					said = " (it said: " + msg + ")"
				}
				err = fmt.Errorf("docker: the helper in %s stopped while the command ran%s; the environment is repaired on the next call: %w", e.name, said, err)
			}
		} else if egressSocket != "" {
			e.mu.Lock()
			why := e.helperDisabled
			e.mu.Unlock()
			return backend.Result{}, e.errNeedsHelper(why)
		} else {
			res, err = e.execOnce(ctx, id, req, dir, env, timeout, capBytes)
			if errors.Is(err, errNeedsRepair) && attempt == 0 && !e.rep.Closed() {
				more, rerr := e.rep.Repair(ctx, err.Error())
				if rerr != nil {
					return backend.Result{}, errors.Join(err, rerr)
				}
				notes = append(notes, more...)
				continue
			}
		}
		if err != nil {
			return backend.Result{}, err
		}
		res.Notes = append(notes, res.Notes...)
		e.log.Debug("exec finished", "mode", mode, "exit_code", res.ExitCode,
			"duration_ms", res.Duration.Milliseconds(), "timed_out", res.TimedOut, "cancelled", res.Cancelled)
		return res, nil
	}
}

// ready returns the notes owed to the next Result, repairing the environment first when the
// helper has died.
func (e *Env) ready(ctx context.Context) ([]string, error) {
	return e.rep.Ready(ctx, func() (bool, string) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.mode == ModeExec || e.resident != nil && e.resident.alive() {
			return true, ""
		}
		var c *helper.Client
		if e.resident != nil {
			c = e.resident.client
		}
		return false, helper.Why(c, "the resident helper stopped")
	})
}

// mended reports whether another call's repair brought the helper back while this one
// waited for it (see [backend.Repairer]).
func (e *Env) mended() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.mode == ModeHelper && e.resident != nil && e.resident.alive()
}

// logName names the container in the log.
func (e *Env) logName() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return "container " + e.name
}

// prepare makes sure a container with this configuration runs and, unless it is disabled,
// that a helper runs in it. It returns notes for the next Result when something was
// recreated or restarted.
func (e *Env) prepare(ctx context.Context, why string) ([]string, error) {
	e.mu.Lock()
	old, id := e.resident, e.containerID
	e.resident = nil
	e.mu.Unlock()
	if old != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		old.close(cctx)
		cancel()
	}
	id, why, recreated, err := e.readyContainer(ctx, id, why)
	if err != nil {
		return nil, err
	}
	r, notes := e.startResident(ctx, id, why, recreated != "")
	if err := e.settle(r); err != nil {
		return nil, err
	}
	if recreated != "" {
		notes = append([]string{recreated}, notes...)
	}
	return notes, nil
}

// readyContainer checks that container id (none when empty) still runs, and makes the
// session's container when it does not: it returns the container's ID, why the environment
// is being prepared (the container's fate, when it was recreated), and the note that says
// it was recreated ("" when it was not).
func (e *Env) readyContainer(ctx context.Context, id, why string) (newID, newWhy, recreated string, err error) {
	replaced := false
	if id != "" {
		info, err := e.inspect(ctx, id)
		switch {
		case cerrdefs.IsNotFound(err):
			why, id = "container "+e.name+" was removed", ""
		case err != nil:
			return "", why, "", err
		case info.State == nil || !info.State.Running:
			why, id = "container "+e.name+" had stopped", ""
		}
		replaced = id == ""
	}
	if id != "" {
		return id, why, "", nil
	}
	if e.prepareHook != nil {
		e.prepareHook("ensure")
	}
	newID, note, err := e.ensureContainer(ctx)
	if err != nil {
		return "", why, "", err
	}
	e.mu.Lock()
	e.containerID = newID // recorded at once, for a Close that waits for this repair
	e.mu.Unlock()
	if e.prepareHook != nil {
		e.prepareHook("ensured")
	}
	info, err := e.inspect(ctx, newID)
	if err != nil {
		return "", why, "", err
	}
	e.mu.Lock()
	if info.Config != nil {
		e.containerEnv = info.Config.Env
	}
	if replaced {
		e.helperStarts = 0 // the helper did not fail: its container went away
	}
	e.mu.Unlock()
	if replaced {
		return newID, why, "environment recreated: " + why + "; " + note, nil
	}
	return newID, why, "", nil
}

// resident is what startResident made of the resident helper: the connection (nil in exec
// mode), the mode, how many times it was started, and why it is disabled ("" when not).
type resident struct {
	conn     *helperConn
	mode     string
	starts   int
	disabled string
}

// startResident starts the resident helper in container id unless it is disabled or has
// stopped twice already, and returns it with the notes a caller shows: why (re)preparing is
// why, and recreated says that the container is new.
func (e *Env) startResident(ctx context.Context, id, why string, recreated bool) (resident, []string) {
	e.mu.Lock()
	r := resident{mode: ModeExec, starts: e.helperStarts, disabled: e.helperDisabled}
	e.mu.Unlock()
	if r.disabled != "" {
		return r, nil
	}
	// What the fallback means: in allowlist mode there is none (see errNeedsHelper).
	fallback, fallbackNow := "; commands start with one docker exec each (~45 ms)", "; commands now start with one docker exec each (~45 ms)"
	if e.egressDir != "" {
		fallback, fallbackNow = "", ""
	}
	if r.starts >= 2 {
		r.disabled = "the resident helper stopped twice (" + why + ")" + fallbackNow
		return r, []string{r.disabled}
	}
	var err error
	r.conn, err = e.startHelper(ctx, id)
	r.starts++
	switch {
	case err != nil:
		r.disabled = "resident helper unavailable: " + err.Error() + fallback
		e.log.Warn("falling back to one exec per command", "error", err)
		if why != "" {
			return r, []string{r.disabled}
		}
	case why != "" && !recreated:
		r.mode = ModeHelper
		return r, []string{"restarted the resident helper: " + why}
	default:
		r.mode = ModeHelper
	}
	return r, nil
}

// settle records r as the environment's resident helper and mode, with the notes every
// result carries; in allowlist mode without a helper it is an error (errNeedsHelper), and
// once the environment is closed backend.ErrClosed.
func (e *Env) settle(r resident) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.rep.Closed() {
		// Closed while repairing: Close, waiting for this repair, stops the helper and
		// removes the container, which are recorded for it.
		e.resident = r.conn
		return backend.ErrClosed
	}
	e.resident, e.mode, e.helperStarts, e.helperDisabled = r.conn, r.mode, r.starts, r.disabled
	e.notes = nil
	if r.disabled != "" {
		e.notes = append(e.notes, r.disabled)
	}
	if r.mode == ModeHelper && e.helper.bin != nil && !e.helper.bin.Static() {
		e.notes = append(e.notes, e.helper.bin.LinkNote())
	}
	if n := helper.SiblingNote(); r.mode == ModeHelper && e.cfg.HelperBinary == "" && n != "" {
		e.notes = append(e.notes, n)
	}
	if e.egressDir != "" {
		e.notes = append(e.notes, "the container has no network of its own (network mode \"none\"); commands reach only [network] allow_domains, through Airlock's egress proxy, which the resident helper relays from 127.0.0.1 inside the container to a socket per command in "+e.egressDir)
		if r.mode == ModeExec {
			return e.errNeedsHelper(r.disabled)
		}
	} else if e.cfg.Network != "none" {
		e.notes = append(e.notes, "the container has network access (environment.docker.network = \""+e.cfg.Network+"\")")
	}
	return nil
}

// wrapperScript runs one command in exec mode. The exec'd shell is a session and process
// group leader (runc makes it one), so everything the command starts shares its group. It
// confines the working directory after resolving symlinks, records its PID for a kill from a
// second exec, arms a watchdog that enforces the time limit inside the container even if
// Airlock goes away, runs the command, then kills what the command left in the group
// (reading /proc, since sh cannot kill a group without killing itself) before exiting with
// the command's status. The watchdog is killed first, and it stops when its sleep dies: the
// sweep visits /proc in name order ("1000" before "999"), and a watchdog that outlived its
// sleep would TERM the group — the wrapper with it — after the command had succeeded.
//
// Arguments: WORKSPACE DIR PIDFILE LIMIT_S GRACE_S TOUCHFILE ARGV...
const wrapperScript = `ws=$1 dir=$2 pidf=$3 limit=$4 grace=$5 touchf=$6; shift 6
[ -n "$touchf" ] && touch -c "$touchf" 2>/dev/null
if cd -P -- "$ws" 2>/dev/null; then real_ws=$PWD; else real_ws=$ws; fi
if ! cd -P -- "$dir" 2>/dev/null; then printf 'airlock-wrapper:nodir:%s\n' "$dir" >&2; exit 125; fi
case "$PWD/" in "$real_ws"/*) ;; *) printf 'airlock-wrapper:outside:%s\n' "$PWD" >&2; exit 125;; esac
echo "$$ $(cut -d' ' -f22 /proc/$$/stat 2>/dev/null)" > "$pidf"
(sleep "$limit" || exit; rm -f "$pidf"; kill -TERM -$$; sleep "$grace" || exit; kill -KILL -$$) </dev/null >/dev/null 2>&1 &
wd=$!
"$@"
rc=$?
kill -KILL $wd 2>/dev/null
me=$$ n=0
while [ $n -lt 10 ]; do
	found=
	for f in /proc/[0-9]*/stat; do
		{ read -r line < "$f"; } 2>/dev/null || continue
		p=${line%% *}
		[ "$p" = "$me" ] && continue
		set -- ${line##*') '}
		[ "$3" = "$me" ] && kill -KILL "$p" 2>/dev/null && found=1
	done
	[ -n "$found" ] || break
	n=$((n+1))
done
rm -f "$pidf"
exit $rc`

// killScript kills the process group whose leader's PID is in $1: TERM, up to $2 tenths of a
// second of grace, KILL. The file holds the leader's PID and start time: a wrapper that ended
// meanwhile (its own watchdog, a crash) leaves a PID that another command's wrapper may have
// been given since, and that one must not be touched — so the leader is checked first, and
// KILL follows only while the group still lives (its ID cannot be reused while it does).
const killScript = `i=0; until { read -r p st < "$1"; } 2>/dev/null; do i=$((i+1)); [ $i -gt 20 ] && exit 0; sleep 0.05; done
[ -z "$st" ] || [ "$(cut -d' ' -f22 /proc/"$p"/stat 2>/dev/null)" = "$st" ] || { rm -f "$1"; exit 0; }
kill -TERM -"$p" 2>/dev/null; i=0
while [ $i -lt "$2" ]; do kill -0 -"$p" 2>/dev/null || { rm -f "$1"; exit 0; }; sleep 0.1; i=$((i+1)); done
kill -KILL -"$p" 2>/dev/null; rm -f "$1"; exit 0`

// execOnce runs one command with its own docker exec.
func (e *Env) execOnce(ctx context.Context, id string, req backend.Request, dir string, env []string, timeout time.Duration, capBytes int64) (backend.Result, error) {
	argv := req.Argv
	if req.Command != "" {
		argv = []string{"/bin/sh", "-c", req.Command}
	}
	pidf := "/tmp/.airlock-exec-" + newSessionID() + ".pid"
	limit := int64((timeout+time.Second-1)/time.Second) + 2
	grace := int64((e.cfg.KillGrace+time.Second-1)/time.Second) + 1
	touchf := ""
	if !e.cfg.ReadOnlyRootfs {
		touchf = lastUseFile
	}
	cmd := append([]string{"/bin/sh", "-c", wrapperScript, "airlock-exec", e.cfg.Workdir, dir, pidf,
		strconv.FormatInt(limit, 10), strconv.FormatInt(grace, 10), touchf}, argv...)

	cctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	x, err := e.cli.ContainerExecCreate(cctx, id, container.ExecOptions{
		User: e.cfg.User, Cmd: cmd, Env: env,
		AttachStdin: req.Stdin != nil, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return backend.Result{}, e.execErr(err)
	}
	hij, err := e.cli.ContainerExecAttach(cctx, x.ID, container.ExecAttachOptions{})
	if err != nil {
		return backend.Result{}, e.execErr(err)
	}
	defer hij.Close()
	start := time.Now()

	if req.Stdin != nil {
		go func() {
			_, _ = io.Copy(hij.Conn, req.Stdin)
			_ = hij.CloseWrite()
		}()
	}
	stdout := backend.NewCappedBuffer(capBytes)
	stderr := backend.NewCappedBuffer(capBytes)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = stdcopy.StdCopy(stdout, stderr, hij.Reader)
	}()

	var timedOut, cancelled bool
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		timedOut = true
	case <-ctx.Done():
		cancelled = true
	}
	if timedOut || cancelled {
		e.killExec(ctx, id, pidf)
		select {
		case <-done:
		case <-time.After(pipeDrain):
			hij.Close()
			<-done
		}
	}

	code, err := e.execExitCode(context.WithoutCancel(ctx), x.ID)
	if err != nil {
		return backend.Result{}, err
	}
	res := backend.Captured(stdout, stderr)
	if code == 125 && bytes.HasPrefix(res.Stderr, []byte("airlock-wrapper:")) {
		return backend.Result{}, e.wrapperRefusal(res.Stderr, req.Dir)
	}
	res.ExitCode, res.Duration = code, time.Since(start)
	res.TimedOut, res.Cancelled = timedOut, cancelled
	return res, nil
}

// killExec kills the tree of the command whose wrapper wrote its PID to pidf in container
// id: TERM, then KILL after the kill grace (killScript).
func (e *Env) killExec(ctx context.Context, id, pidf string) {
	kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.KillGrace+cleanupTimeout)
	defer kcancel()
	tenths := strconv.FormatInt(int64(e.cfg.KillGrace/(100*time.Millisecond)), 10)
	if _, err := e.rawExec(kctx, id, rawExec{user: e.cfg.User, cmd: []string{"/bin/sh", "-c", killScript, "kill", pidf, tenths}}); err != nil {
		e.log.Warn("kill of timed-out command failed", "error", err)
	}
}

// wrapperRefusal is the error the wrapper script reported on its first stderr line
// ("airlock-wrapper:KIND:WHAT") instead of starting the command: a working directory dir
// that resolves outside the workspace, or does not exist.
func (e *Env) wrapperRefusal(stderr []byte, dir string) error {
	line, _, _ := strings.Cut(string(stderr), "\n")
	kind, what, _ := strings.Cut(strings.TrimPrefix(line, "airlock-wrapper:"), ":")
	if kind == "outside" {
		return fmt.Errorf("%w: working directory %q resolves to %s, outside %s", backend.ErrOutsideWorkspace, dir, what, e.cfg.Workdir)
	}
	return fmt.Errorf("%w: working directory %q does not exist in the container", backend.ErrInvalidRequest, what)
}

// execErr maps an exec failure: a missing or stopped container needs repair, a daemon that
// does not answer is unavailable.
func (e *Env) execErr(err error) error {
	switch {
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("docker exec: container %s was removed: %w", e.name, errNeedsRepair)
	case cerrdefs.IsConflict(err):
		return fmt.Errorf("docker exec: container %s is not running: %w", e.name, errNeedsRepair)
	case client.IsErrConnectionFailed(err):
		return e.unreachable(err)
	}
	return fmt.Errorf("docker exec: %w", err)
}

// execExitCode waits (briefly) for the daemon to record the exec's end and returns its code.
func (e *Env) execExitCode(ctx context.Context, execID string) (int, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		ictx, cancel := context.WithTimeout(ctx, apiTimeout)
		x, err := e.cli.ContainerExecInspect(ictx, execID)
		cancel()
		if err != nil {
			return 0, e.execErr(err)
		}
		if !x.Running {
			return x.ExitCode, nil
		}
		if time.Now().After(deadline) {
			return -1, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rawExec is a small housekeeping exec (install, kill) whose output is kept whole up to
// 64 KiB.
type rawExec struct {
	user  string
	cmd   []string
	stdin io.Reader
}

func (e *Env) rawExec(ctx context.Context, id string, r rawExec) (backend.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	x, err := e.cli.ContainerExecCreate(ctx, id, container.ExecOptions{
		User: r.user, Cmd: r.cmd, AttachStdin: r.stdin != nil, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return backend.Result{}, e.execErr(err)
	}
	hij, err := e.cli.ContainerExecAttach(ctx, x.ID, container.ExecAttachOptions{})
	if err != nil {
		return backend.Result{}, e.execErr(err)
	}
	defer hij.Close()
	if r.stdin != nil {
		go func() {
			_, _ = io.Copy(hij.Conn, r.stdin)
			_ = hij.CloseWrite()
		}()
	}
	stdout, stderr := backend.NewCappedBuffer(64<<10), backend.NewCappedBuffer(64<<10)
	done := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stdout, stderr, hij.Reader)
		done <- err
	}()
	select {
	case <-done:
	case <-ctx.Done():
		hij.Close()
		<-done
		return backend.Result{}, fmt.Errorf("docker exec %s: %w", r.cmd[0], ctx.Err())
	}
	code, err := e.execExitCode(ctx, x.ID)
	if err != nil {
		return backend.Result{}, err
	}
	return backend.Result{ExitCode: code, Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}, nil
}
