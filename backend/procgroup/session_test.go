package procgroup

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestCommandOwnSessionOnlyStandardStreams: a command leads a session of its own, has no
// controlling terminal, and holds no descriptor this process inherited or opened without
// close-on-exec — here a file outside anything the command was given.
func TestCommandOwnSessionOnlyStandardStreams(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "held")
	if err := os.WriteFile(secret, []byte("held-open-marker\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// No O_CLOEXEC, as an inherited one. The command reads it by its number through /proc
	// (a shell's redirection takes single digits only).
	fd, err := syscall.Open(secret, syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	var out bytes.Buffer
	s := sh(`read -r _ _ _ _ _ sid _ < /proc/$$/stat; echo "sid=$sid pid=$$"; ls /proc/$$/fd; cat /proc/$$/fd/` + strconv.Itoa(fd) + `; cat /dev/tty; true`)
	s.Stdout, s.Stderr = &out, &out
	if o, err := Run(context.Background(), s); err != nil || o.ExitCode != 0 {
		t.Fatalf("run: %+v %v\n%s", o, err, out.String())
	}
	got := out.String()
	var sid, pid string
	for _, f := range strings.Fields(got) {
		if v, ok := strings.CutPrefix(f, "sid="); ok {
			sid = v
		} else if v, ok := strings.CutPrefix(f, "pid="); ok {
			pid = v
		}
	}
	if sid == "" || sid != pid {
		t.Errorf("the command does not lead a session of its own: %q", got)
	}
	if strings.Contains(got, "held-open-marker") {
		t.Errorf("a descriptor opened without close-on-exec reached the command: %q", got)
	}
	for _, line := range strings.Split(got, "\n") {
		if n, err := strconv.Atoi(strings.TrimSpace(line)); err == nil && n > 2 {
			t.Errorf("the command holds descriptor %d: %q", n, got)
		}
	}
}

// TestTimeoutKillsSetsidChild: a child that calls setsid leaves its command's process group
// and session; on the command's timeout it dies with the rest of the tree, where this
// process is a subreaper (as the airlock CLI and the resident helper are).
func TestTimeoutKillsSetsidChild(t *testing.T) {
	if err := EnableSubreaper(); err != nil {
		t.Skipf("subreaper: %v", err)
	}
	pidfile := filepath.Join(t.TempDir(), "escaped")
	s := sh("setsid sh -c 'echo $$ > " + pidfile + "; exec sleep 300' </dev/null >/dev/null 2>&1 & sleep 300")
	s.Timeout, s.KillGrace = 500*time.Millisecond, 100*time.Millisecond
	o, err := Run(context.Background(), s)
	if err != nil || !o.TimedOut {
		t.Fatalf("run: %+v %v", o, err)
	}
	pid, _ := os.ReadFile(pidfile)
	if p := strings.TrimSpace(string(pid)); p == "" || alive(p) {
		t.Errorf("the setsid child %q outlived its command's timeout", p)
	}
}

// TestSparePipesMadeWhileACommandRuns: once a command started, the next command's output
// pipes are made (close-on-exec: no process started meanwhile holds them), and the next
// command takes exactly those; its output comes through them.
func TestSparePipesMadeWhileACommandRuns(t *testing.T) {
	var out bytes.Buffer
	s := sh(`echo first`)
	s.Stdout = &out
	if o, err := Run(context.Background(), s); err != nil || o.ExitCode != 0 {
		t.Fatalf("run: %+v %v", o, err)
	}
	spare := sparePipes.Load()
	if spare == nil {
		t.Fatal("no pipes were made ahead while the command ran")
	}
	for i := range spare.r {
		for _, fd := range []int{spare.r[i], int(spare.w[i].Fd())} {
			flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
			if err != nil || flags&unix.FD_CLOEXEC == 0 {
				t.Errorf("spare pipe descriptor %d is not close-on-exec: %#x %v", fd, flags, err)
			}
		}
	}
	out.Reset()
	s = sh(`echo second; echo err >&2`)
	var errb bytes.Buffer
	s.Stdout, s.Stderr = &out, &errb
	p, err := Start(s)
	if err != nil {
		t.Fatal(err)
	}
	if p.streams[0].fd != spare.r[0] || p.streams[1].fd != spare.r[1] {
		t.Errorf("the next command's streams are %d,%d, not the spare set's %d,%d", p.streams[0].fd, p.streams[1].fd, spare.r[0], spare.r[1])
	}
	if o := p.Wait(context.Background()); o.ExitCode != 0 || out.String() != "second\n" || errb.String() != "err\n" {
		t.Errorf("through the spare pipes: %+v %q %q", o, out.String(), errb.String())
	}
}
