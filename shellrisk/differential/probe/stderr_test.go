package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestMain makes the test binary a writer when the stderr test starts it as one.
func TestMain(m *testing.M) {
	if os.Getenv("AIRLOCK_PROBE_TEST_WRITER") == "1" {
		writer()
		return
	}
	os.Exit(m.Run())
}

// writer reads Go-quoted strings, one per line, and writes each to fd 2 in one write(2),
// then says "ok" on stdout: once the parent reads that, the write is in the socket.
func writer() {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		s, err := strconv.Unquote(sc.Text())
		if err != nil {
			os.Exit(2)
		}
		if _, err := syscall.Write(2, []byte(s)); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("ok\n")
	}
	os.Exit(0)
}

type testWriter struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startWriter(t *testing.T, stderr *os.File) *testWriter {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AIRLOCK_PROBE_TEST_WRITER=1")
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return &testWriter{cmd: cmd, in: in, out: bufio.NewReader(out)}
}

func (w *testWriter) write(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(w.in, strconv.Quote(s)+"\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := w.out.ReadString('\n'); err != nil || line != "ok\n" {
		t.Fatalf("writer: %q, %v", line, err)
	}
}

// TestStderrKeepsEachWriterWhole replays, write by write, the interleaving that made the
// differential test read a lookup of "Cannot fork0": two dash jobs of one run, one
// failing to fork while the other reports a name not found. Through a pipe the bytes
// are "dash: 1: dash: 1: Cannot fork0: not found\n\n"; the log gives each job's
// diagnostic whole.
func TestStderrKeepsEachWriterWhole(t *testing.T) {
	t.Parallel()
	stderr, diag, err := newStderr()
	if err != nil {
		t.Fatal(err)
	}
	a := startWriter(t, stderr)
	b := startWriter(t, stderr)
	_ = stderr.Close()
	var raw bytes.Buffer
	for _, step := range []struct {
		w *testWriter
		s string
	}{
		{a, "dash: 1: "}, {b, "dash: 1: "}, {a, "Cannot fork"}, {b, "0: not found"}, {a, ""}, {b, "\n"}, {a, "\n"},
	} {
		step.w.write(t, step.s)
		raw.WriteString(step.s)
	}
	for _, w := range []*testWriter{a, b} {
		_ = w.in.Close()
		if err := w.cmd.Wait(); err != nil {
			t.Fatalf("writer: %v", err)
		}
	}
	got, err := diag.wait(time.Now().Add(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if want := "dash: 1: Cannot fork\ndash: 1: 0: not found\n"; string(got) != want {
		t.Errorf("stderr = %q, want %q (written in that order: %q)", got, want, raw.String())
	}
	names := notFound("dash", got)
	if len(names) != 1 || string(names[0]) != "0" {
		t.Errorf("notFound = %q, want [\"0\"]", names)
	}
}

// TestStderrWaitEndsAtDeadline: a writer that keeps the socket open past the run does
// not hold the driver; wait says so.
func TestStderrWaitEndsAtDeadline(t *testing.T) {
	t.Parallel()
	stderr, diag, err := newStderr()
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	if _, err := stderr.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	got, err := diag.wait(time.Now().Add(50 * time.Millisecond))
	if err == nil {
		t.Error("wait returned no error while a writer still held the socket")
	}
	if string(got) != "x\n" {
		t.Errorf("stderr = %q, want %q", got, "x\n")
	}
}

// TestByWriter joins each writer's records and keeps a cut line from joining the next.
func TestByWriter(t *testing.T) {
	t.Parallel()
	got := byWriter([]stderrRecord{{1, []byte("a")}, {2, []byte("b\n")}, {1, []byte("c")}, {3, []byte("d\n")}})
	if want := "ac\nb\nd\n"; string(got) != want {
		t.Errorf("byWriter = %q, want %q", got, want)
	}
}
