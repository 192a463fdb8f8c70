package procgroup

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sh(script string) Spec {
	return Spec{Path: "/bin/sh", Args: []string{"sh", "-c", script}, Dir: os.TempDir()}
}

func TestRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		spec      Spec
		cancel    bool
		exit      int
		timedOut  bool
		cancelled bool
	}{
		{"exit code", sh("exit 3"), false, 3, false, false},
		{"signal is 128+N", sh("kill -KILL $$"), false, 137, false, false},
		{"timeout", func() Spec { s := sh("sleep 30"); s.Timeout = 200 * time.Millisecond; return s }(), false, 143, true, false},
		{"cancel", sh("sleep 30"), true, 143, false, true},
		{"term ignored, then kill", func() Spec {
			s := sh("trap '' TERM; sleep 30")
			s.Timeout, s.KillGrace = 200*time.Millisecond, 200*time.Millisecond
			return s
		}(), false, 137, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				time.AfterFunc(200*time.Millisecond, cancel)
			}
			out, err := Run(ctx, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if out.ExitCode != tc.exit || out.TimedOut != tc.timedOut || out.Cancelled != tc.cancelled {
				t.Errorf("outcome %+v, want exit %d timedOut %v cancelled %v", out, tc.exit, tc.timedOut, tc.cancelled)
			}
		})
	}
}

// TestLeftoversDie: a background process the command leaves in its group is killed when the
// command exits, and Run does not wait for it.
func TestLeftoversDie(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "pid")
	var stdout bytes.Buffer
	s := sh("sleep 300 & echo $! > " + pidfile + "; echo done")
	s.Stdout = &stdout
	out, err := Run(context.Background(), s)
	if err != nil || out.ExitCode != 0 || stdout.String() != "done\n" {
		t.Fatalf("run: %+v %v %q", out, err, stdout.String())
	}
	pid, _ := os.ReadFile(pidfile)
	for i := 0; i < 50; i++ {
		stat, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/stat")
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("background sleep %s survived its command", pid)
}

func TestStartFailure(t *testing.T) {
	t.Parallel()
	_, err := Run(context.Background(), Spec{Path: "/nonexistent/prog", Args: []string{"prog"}})
	if err == nil || StartFailureCode(err) != 127 {
		t.Errorf("missing program: %v, code %d", err, StartFailureCode(err))
	}
	if StartFailureCode(exec.ErrNotFound) != 127 || StartFailureCode(os.ErrPermission) != 126 {
		t.Error("start failure codes")
	}
}

// TestOutput: both streams arrive whole, however much the command writes (more than a pipe
// holds, on both at once, so the reading must keep up while the leader runs), and what the
// leader writes just before it exits is not lost.
func TestOutput(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	s := sh(`i=0; while [ $i -lt 3000 ]; do echo "out line $i ........................................"; echo "err line $i" >&2; i=$((i+1)); done; printf last`)
	s.Stdout, s.Stderr = &out, &errb
	res, err := Run(context.Background(), s)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	if n := strings.Count(out.String(), "out line "); n != 3000 || !strings.HasSuffix(out.String(), "....\nlast") {
		t.Errorf("stdout: %d lines, ends %q", n, out.String()[max(0, out.Len()-20):])
	}
	if n := strings.Count(errb.String(), "err line "); n != 3000 {
		t.Errorf("stderr: %d lines", n)
	}
}

// A command given no stdin reads /dev/null, read-only, through the descriptor kept for every
// command: it reaches its end at once, cannot be written to, and stays open for the next.
func TestNoStdinIsDevNull(t *testing.T) {
	t.Parallel()
	for i := range 3 {
		var out, errb bytes.Buffer
		s := sh(`readlink /proc/self/fd/0; cat; echo x >&0 2>/dev/null || echo read-only`)
		s.Stdout, s.Stderr = &out, &errb
		res, err := Run(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if want := "/dev/null\nread-only\n"; out.String() != want || res.ExitCode != 0 {
			t.Errorf("command %d: %q %q exit %d, want %q", i, out.String(), errb.String(), res.ExitCode, want)
		}
	}
}

// TestAsideWatchedWhileTheCommandRuns: Wait calls an Aside's Ready once, while the command
// still runs, when the descriptor becomes readable, and never when it stays quiet; the
// command's output and exit are the same either way.
func TestAsideWatchedWhileTheCommandRuns(t *testing.T) {
	t.Parallel()
	for _, write := range []bool{true, false} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		// The command ends once the test saw Ready (it then removes the file), or on its own.
		gate := filepath.Join(t.TempDir(), "gate")
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		spec := sh(`i=0; while [ -e "$GATE" ] && [ $i -lt 10 ]; do sleep 0.05; i=$((i+1)); done; echo done`)
		spec.Env = []string{"GATE=" + gate, "PATH=/usr/bin:/bin"}
		spec.Stdout = &out
		readies := 0
		spec.Aside = &Aside{FD: int(r.Fd()), Ready: func() {
			readies++
			if err := os.Remove(gate); err != nil {
				t.Errorf("gate: %v", err)
			}
		}}
		if write {
			time.AfterFunc(100*time.Millisecond, func() { _, _ = w.Write([]byte("x")) })
		}
		o, err := Run(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if write {
			want = 1
		}
		if readies != want || o.ExitCode != 0 || out.String() != "done\n" {
			t.Errorf("written %v: Ready called %d times (want %d), exit %d, output %q", write, readies, want, o.ExitCode, out.String())
		}
	}
}

// TestOutputClosedBeforeTheEnd: a command that closes its stdout and stderr and runs on is
// seen to end by its exit alone, in one poll(2) round: the waiter holds the pipes' write
// ends until then, so their closing wakes nobody (it took two rounds or three before).
func TestOutputClosedBeforeTheEnd(t *testing.T) {
	t.Parallel()
	p, err := Start(sh("exec >&- 2>&-; sleep 0.2"))
	if err != nil {
		t.Fatal(err)
	}
	if o := p.Wait(context.Background()); o.ExitCode != 0 {
		t.Fatalf("exit %d, want 0", o.ExitCode)
	}
	if p.leaderWakes != 1 {
		t.Fatalf("the waiter woke %d times before the leader's exit, want 1: the pipes' closing woke it", p.leaderWakes)
	}
}

// TestEnvironAsOSExecGivesIt: a command's environment is what os/exec would give it (the
// last of a name wins, entries without "=" kept, empty ones dropped, NUL refused), also
// when the same environment comes again, and when a caller rewrites the slice it passed.
func TestEnvironAsOSExecGivesIt(t *testing.T) {
	run := func(env []string) (string, error) {
		var out bytes.Buffer
		spec := Spec{Path: "/usr/bin/env", Args: []string{"env"}, Dir: os.TempDir(), Env: env, Stdout: &out}
		_, err := Run(context.Background(), spec)
		return out.String(), err
	}
	env := []string{"A=1", "B=2", "A=3", "", "NOEQUALS", "C=4"}
	want := "B=2\nA=3\nNOEQUALS\nC=4\n"
	for i := 0; i < 2; i++ { // the second time from the kept result
		if got, err := run(env); err != nil || got != want {
			t.Fatalf("run %d: %v %q, want %q", i, err, got, want)
		}
	}
	env[1] = "B=changed" // the same slice, rewritten
	if got, err := run(env); err != nil || got != "B=changed\nA=3\nNOEQUALS\nC=4\n" {
		t.Fatalf("rewritten: %v %q", err, got)
	}
	if _, err := run([]string{"A=1", "B=x\x00y"}); err == nil {
		t.Fatal("a NUL in the environment started a command")
	}
	if got, err := run(nil); err != nil || got != "" {
		t.Fatalf("nil: %v %q", err, got)
	}
}
