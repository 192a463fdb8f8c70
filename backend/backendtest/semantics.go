package backendtest

import (
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
)

// The cases below hold every backend and mode to the same behaviour where a user would
// otherwise see a difference: the modes of the files a command creates, what a timed-out
// command prints, and when a command that has exited returns.

// testCreatedModes: commands run with umask 0022 ([backend.Umask]) everywhere, so what they
// create is -rw-r--r-- and drwxr-xr-x on every backend and in every mode.
func testCreatedModes(t *testing.T, env backend.Environment) {
	dir := Scratch(t, env)
	res := Exec(t, env, backend.Request{Dir: dir, Command: `umask; : > f; mkdir d; stat -c '%a %n' f d`})
	if want := "0022\n644 f\n755 d\n"; string(res.Stdout) != want || res.ExitCode != 0 {
		t.Errorf("umask and modes: stdout %q stderr %q exit %d, want %q", res.Stdout, res.Stderr, res.ExitCode, want)
	}
}

// testTimeoutQuiet: a command killed at its timeout says nothing it did not print itself —
// no "Terminated" from a wrapper shell in one mode and not in another. The result says it
// timed out.
func testTimeoutQuiet(t *testing.T, env backend.Environment) {
	res := Exec(t, env, backend.Request{Command: "echo before; sleep 30; echo after", Timeout: time.Second})
	if !res.TimedOut || string(res.Stdout) != "before\n" {
		t.Errorf("timed out %v, stdout %q, want true and %q", res.TimedOut, res.Stdout, "before\n")
	}
	if len(res.Stderr) != 0 {
		t.Errorf("stderr %q: a timed-out command that printed nothing there must leave it empty", res.Stderr)
	}
	if res.ExitCode != 128+15 && res.ExitCode != 128+9 && res.ExitCode != -1 {
		t.Errorf("exit code %d, want 143 (TERM) or 137 (KILL)", res.ExitCode)
	}
}

// testBackgroundHoldsStdout: a command returns when it exits, even though a child it started
// in the background still holds its stdout — in the command's process group (killed with
// it) or in a session of its own (setsid: killed where the backend can, let go otherwise).
func testBackgroundHoldsStdout(t *testing.T, env backend.Environment) {
	for _, command := range []string{"sleep 30 & echo done", "setsid sleep 30 & echo done"} {
		res := Exec(t, env, backend.Request{Command: command, Timeout: 20 * time.Second})
		if res.TimedOut || res.ExitCode != 0 || string(res.Stdout) != "done\n" {
			t.Errorf("%s: timed out %v, exit %d, stdout %q stderr %q: want the command's own exit, 0, %q",
				command, res.TimedOut, res.ExitCode, res.Stdout, res.Stderr, "done\n")
		}
		if res.Duration > 15*time.Second {
			t.Errorf("%s: took %s: the command returned only when its child let go of its stdout", command, res.Duration)
		}
	}
}
