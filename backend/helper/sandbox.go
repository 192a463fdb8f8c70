package helper

import (
	"context"
	"encoding/json"
	"slices"
	"unsafe"

	"github.com/airlock-dev/airlock/backend/procgroup"
	"github.com/airlock-dev/airlock/backend/sandbox"
)

// The helper confines each command with the kernel sandbox it was started with
// (ServeOptions.Sandbox): the command is started from a thread that carries it, so it
// inherits its own Landlock domain and cannot signal or read the helper, and the helper
// itself stays unconfined. The helper tells the client in its hello what is enforced.

// startCommand runs spec under the helper's sandbox, with TMPDIR set to its private temp
// directory. onWorker says that this goroutine is a restricted thread of the sandbox's
// (server.start): the command is started and waited for right here.
func (s *server) startCommand(ctx context.Context, spec procgroup.Spec, onWorker bool) (procgroup.Outcome, error) {
	if s.opts.TempDir != "" {
		spec.Env = s.scratchEnv(spec.Env)
	}
	if onWorker {
		spec.Restricted = true
		proc, err := procgroup.Start(spec)
		if err != nil {
			return procgroup.Outcome{}, err
		}
		return proc.Wait(ctx), nil
	}
	if s.opts.Spawner != nil {
		proc, err := s.opts.Spawner.start(spec)
		if err != nil {
			return procgroup.Outcome{}, err
		}
		return proc.Wait(ctx), nil
	}
	var proc *procgroup.Process
	var startErr error
	// Only the fork and exec run on the restricted thread, which is held for the command
	// until it has ended; the wait happens here (see sandbox.Sandbox.Hold).
	release, err := s.opts.Sandbox.Hold(func() error {
		proc, startErr = procgroup.Start(spec)
		return nil
	})
	if err != nil {
		return procgroup.Outcome{}, err
	}
	defer release()
	if startErr != nil {
		return procgroup.Outcome{}, startErr
	}
	return proc.Wait(ctx), nil
}

// scratchEnv is [sandbox.ScratchEnv] of env, made once for the commands that bring the same
// environment: a start that asks for the one the previous start carried (SameEnv) gets the
// slice the server kept, and rewriting it cost ~10 µs a command. The result is shared by
// those commands, and clipped, so that nothing appends into it.
func (s *server) scratchEnv(env []string) []string {
	if m := s.scratch.Load(); m != nil && sameSlice(m.in, env) {
		return m.out
	}
	out := slices.Clip(sandbox.ScratchEnv(env, s.opts.TempDir, s.opts.Sandbox.Enforced()))
	s.scratch.Store(&scratchMemo{in: env, out: out})
	return out
}

// scratchMemo is scratchEnv's last environment and what it made of it.
type scratchMemo struct{ in, out []string }

// sameSlice reports whether a and b are the same slice, not merely equal ones: a kept
// environment is never changed, while another slice's contents could be.
func sameSlice(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b))
}

// sandboxHello is what the server's hello says about the sandbox: the helper's own
// isolation (its namespaces) first, then the kernel sandbox each command gets.
func sandboxHello(opts ServeOptions) (bool, []string) {
	sb := opts.Sandbox
	if sb == nil {
		if len(opts.Isolation) > 0 {
			return true, append(append([]string(nil), opts.Isolation...), "sandbox: no Landlock or seccomp on top (the helper was started without)")
		}
		return false, []string{"sandbox: not enforced (the helper was started without one)"}
	}
	if len(opts.Isolation) > 0 {
		return true, append(append([]string(nil), opts.Isolation...), sb.Notes()...)
	}
	return sb.Enforced(), sb.Notes()
}

// Sandbox reports what the helper said about its kernel sandbox: whether commands run under
// it, and the lines that say what is and is not enforced. It is valid once Ready returned.
func (c *Client) Sandbox() (enforced bool, notes []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peer.SandboxEnforced, append([]string(nil), c.peer.SandboxNotes...)
}

func (c *Client) rememberHello(payload []byte) {
	var h hello
	if json.Unmarshal(payload, &h) == nil {
		c.mu.Lock()
		c.peer = h
		c.mu.Unlock()
	}
}
