package helper

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/backend"
)

// signalWriter collects what is written and tells waiters when it contains a string.
type signalWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	want  string
	found chan struct{}
	once  sync.Once
}

func newSignalWriter(want string) *signalWriter {
	return &signalWriter{want: want, found: make(chan struct{})}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.found) })
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// The first line reaches the request's writer while the command still runs: the command
// only goes on once the test has seen it (its stdin is the test's gate), so without live
// frames the call could never end before its deadline.
func TestLiveOutputArrivesWhileTheCommandRuns(t *testing.T) {
	t.Parallel()
	c := pair(t)
	stdout, stderr := newSignalWriter("first\n"), newSignalWriter("warn\n")
	gate, open := io.Pipe()
	req := shReq(t.TempDir(), "echo first; echo warn >&2; read go; echo second")
	req.Stdin, req.Stdout, req.Stderr = gate, stdout, stderr
	type answer struct {
		res backend.Result
		err error
	}
	done := make(chan answer, 1)
	ctx := ctxFor(t)
	go func() {
		res, err := c.Exec(ctx, req)
		done <- answer{res, err}
	}()
	for _, w := range []*signalWriter{stdout, stderr} {
		select {
		case <-w.found:
		case a := <-done:
			t.Fatalf("the command ended (%+v, %v) before its first output was delivered", a.res, a.err)
		case <-ctx.Done():
			t.Fatalf("no live output %q before the deadline (got %q)", w.want, w.String())
		}
	}
	if _, err := open.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	_ = open.Close()
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	if !a.res.Streamed || a.res.ExitCode != 0 {
		t.Errorf("streamed %v exit %d", a.res.Streamed, a.res.ExitCode)
	}
	// Everything live was written before Exec returned, and the kept output is the same.
	if got := stdout.String(); got != "first\nsecond\n" || string(a.res.Stdout) != got {
		t.Errorf("live stdout %q, kept %q", got, a.res.Stdout)
	}
	if got := stderr.String(); got != "warn\n" || string(a.res.Stderr) != got {
		t.Errorf("live stderr %q, kept %q", got, a.res.Stderr)
	}
}

// Without writers nothing is sent live and the result says so.
func TestNoLiveOutputUnlessAsked(t *testing.T) {
	t.Parallel()
	c := pair(t)
	res, err := c.Exec(ctxFor(t), shReq(t.TempDir(), "echo hi"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Streamed || string(res.Stdout) != "hi\n" {
		t.Errorf("streamed %v stdout %q", res.Streamed, res.Stdout)
	}
}

// With live output on, what the result keeps is still capped by the helper; the live copy
// gets every byte, like the local backend's.
func TestLiveOutputKeepsTheCap(t *testing.T) {
	t.Parallel()
	c := pair(t)
	req := shReq(t.TempDir(), "echo FIRST; head -c 4194304 /dev/zero | tr '\\0' x; echo; echo LAST")
	req.MaxOutputBytes = 64 << 10
	var live countWriter
	req.Stdout = &live
	res, err := c.Exec(ctxFor(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || len(res.Stdout) > 64<<10+256 || !strings.HasSuffix(string(res.Stdout), "LAST\n") {
		t.Errorf("kept: truncated=%v len=%d", res.Truncated, len(res.Stdout))
	}
	if live.n != res.StdoutBytes || res.StdoutBytes < 4<<20 {
		t.Errorf("live copy %d bytes, command wrote %d", live.n, res.StdoutBytes)
	}
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// A writer that falls behind never holds the stream: beyond the queue's bound live output
// is dropped, and the copy says how much.
func TestLiveCopyDropsWhatASlowWriterCannotTake(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	var out bytes.Buffer
	var once sync.Once
	w := writerFunc(func(p []byte) (int, error) {
		once.Do(func() { close(entered); <-release })
		out.Write(p)
		return len(p), nil
	})
	l := newLiveCopy(w, nil)
	chunk := bytes.Repeat([]byte("y"), 1<<20)
	l.push(false, []byte("start\n"))
	<-entered // the deliverer is stuck in the first write
	for i := 0; i < liveQueueBytes/len(chunk)+1; i++ {
		l.push(false, chunk)
	}
	close(release)
	l.finish()
	if got := out.String(); !strings.HasPrefix(got, "start\n") || !strings.HasSuffix(got, "[... airlock: 1048576 bytes of live output dropped: the reader fell behind ...]\n") ||
		len(got) < liveQueueBytes {
		t.Errorf("live copy: %d bytes, ends %q", len(got), got[max(0, len(got)-120):])
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A helper from another build (another protocol version) is refused at the handshake.
func TestOldHelperIsRefused(t *testing.T) {
	t.Parallel()
	sr, sw := io.Pipe()
	cr, cw := io.Pipe()
	go func() { _, _ = io.Copy(io.Discard, cr) }()
	go func() {
		_ = writeFrame(sw, frame{typ: frameHello, payload: mustJSON(hello{Version: ProtocolVersion - 1, Role: "server"})})
	}()
	c := NewClient(sr, cw, ClientOptions{})
	defer c.Close()
	err := c.Ready(context.Background())
	if err == nil || !strings.Contains(err.Error(), "protocol") {
		t.Fatalf("ready: %v, want a refusal naming the protocol", err)
	}
}
