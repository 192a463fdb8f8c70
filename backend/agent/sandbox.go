package agent

import (
	"context"
	"encoding/json"

	"github.com/airlock-dev/airlock/backend/procgroup"
	"github.com/airlock-dev/airlock/backend/sandbox"
)

// The helper confines each command with the kernel sandbox it was started with
// (ServeOptions.Sandbox): the command is started from a thread that carries it, so it
// inherits its own Landlock domain and cannot signal or read the helper, and the helper
// itself stays unconfined. The helper tells the client in its hello what is enforced.

// startCommand runs spec under the helper's sandbox, with TMPDIR set to its private temp
// directory.
func (s *server) startCommand(ctx context.Context, spec procgroup.Spec) (procgroup.Outcome, error) {
	if s.opts.TempDir != "" {
		spec.Env = sandbox.ScratchEnv(spec.Env, s.opts.TempDir, s.opts.Sandbox.Enforced())
	}
	var out procgroup.Outcome
	var runErr error
	if err := s.opts.Sandbox.Do(func() error {
		out, runErr = procgroup.Run(ctx, spec)
		return nil
	}); err != nil {
		return procgroup.Outcome{}, err
	}
	return out, runErr
}

// sandboxHello is what the server's hello says about the sandbox.
func sandboxHello(sb *sandbox.Sandbox) (bool, []string) {
	if sb == nil {
		return false, []string{"sandbox: not enforced (the helper was started without one)"}
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
