package helper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/backendtest"
)

// pair connects a client and a server with two io.Pipes and stops both when the test ends.
func pair(t testing.TB) *Client {
	t.Helper()
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	return serveFor(t, sr, sw, cr, cw, ServeOptions{}, func() { _ = sw.CloseWithError(io.EOF) })
}

// serveFor serves opts on sr and sw and returns a client on cr and cw; when the test ends
// the client is closed and Serve must return (then done runs) without an error.
func serveFor(t testing.TB, sr io.Reader, sw io.Writer, cr io.Reader, cw io.WriteCloser, opts ServeOptions, done func()) *Client {
	t.Helper()
	served := make(chan error, 1)
	go func() {
		err := Serve(context.Background(), sr, sw, opts)
		done()
		served <- err
	}()
	c := NewClient(cr, cw, ClientOptions{})
	t.Cleanup(func() {
		_ = c.Close()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("serve did not return after the client closed")
		}
	})
	return c
}

// osPipes returns two OS pipes, as the helper's stream is: the server's end to read and its
// end to write, then the client's.
func osPipes(t testing.TB) (sr, sw, cr, cw *os.File) {
	t.Helper()
	sr, cw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cr, sw, err = os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return sr, sw, cr, cw
}

func ctxFor(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func shReq(dir, cmd string) Request {
	return Request{Command: cmd, Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}, Timeout: 20 * time.Second}
}

func TestExecOutputAndExit(t *testing.T) {
	t.Parallel()
	c := pair(t)
	dir := t.TempDir()
	res, err := c.Exec(ctxFor(t), shReq(dir, "echo out; echo err >&2; pwd; exit 3"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "out\n" + dir + "\n"; string(res.Stdout) != want || string(res.Stderr) != "err\n" || res.ExitCode != 3 {
		t.Errorf("got %q %q %d", res.Stdout, res.Stderr, res.ExitCode)
	}
	if res.StdoutBytes != int64(len(res.Stdout)) || res.StderrBytes != 4 {
		t.Errorf("counts %d %d", res.StdoutBytes, res.StderrBytes)
	}
}

func TestEnvIsExactlyWhatWasSent(t *testing.T) {
	t.Setenv("MY_API_TOKEN", "host-secret")
	c := pair(t)
	req := shReq(t.TempDir(), "env")
	req.Env = append(req.Env, "ONLY=this")
	res, err := c.Exec(ctxFor(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(res.Stdout), "host-secret") || !strings.Contains(string(res.Stdout), "ONLY=this") {
		t.Errorf("env: %s", res.Stdout)
	}
}

func TestConcurrentCallsDoNotMix(t *testing.T) {
	t.Parallel()
	c := pair(t)
	dir := t.TempDir()
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := fmt.Sprintf("call-%d-%s", i, strings.Repeat("z", i*200))
			req := shReq(dir, "cat; echo "+want+"; echo e"+strconv.Itoa(i)+" >&2")
			req.Stdin = strings.NewReader(want)
			res, err := c.Exec(ctxFor(t), req)
			if err != nil {
				t.Error(err)
				return
			}
			if string(res.Stdout) != want+want+"\n" || string(res.Stderr) != "e"+strconv.Itoa(i)+"\n" {
				t.Errorf("call %d mixed: %q %q", i, res.Stdout, res.Stderr)
			}
		}()
	}
	wg.Wait()
}

func TestLargeStdinAndUnreadStdinDoNotStall(t *testing.T) {
	t.Parallel()
	c := pair(t)
	dir := t.TempDir()
	// A command that never reads 8 MiB of input must not hold up the others.
	blocked := make(chan struct{})
	go func() {
		defer close(blocked)
		req := shReq(dir, "sleep 1")
		req.Stdin = bytes.NewReader(make([]byte, 8<<20))
		if _, err := c.Exec(ctxFor(t), req); err != nil {
			t.Error(err)
		}
	}()
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	req := shReq(dir, "wc -c")
	req.Stdin = bytes.NewReader(data)
	res, err := c.Exec(ctxFor(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(res.Stdout)); got != strconv.Itoa(len(data)) {
		t.Errorf("wc -c = %q", got)
	}
	<-blocked
}

func TestOutputCappedAtSource(t *testing.T) {
	t.Parallel()
	c := pair(t)
	req := shReq(t.TempDir(), "echo FIRST; head -c 33554432 /dev/zero | tr '\\0' x; echo; echo LAST")
	req.MaxOutputBytes = 64 << 10
	res, err := c.Exec(ctxFor(t), req)
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Stdout)
	if !res.Truncated || len(out) > 64<<10+256 || !strings.HasPrefix(out, "FIRST\n") || !strings.HasSuffix(out, "LAST\n") {
		t.Errorf("truncated=%v len=%d", res.Truncated, len(out))
	}
	if res.StdoutBytes < 32<<20 {
		t.Errorf("StdoutBytes = %d", res.StdoutBytes)
	}
}

// treeCmd leaves two grandchildren whose PIDs it writes to dir/pids.
func treeCmd(dir string) string {
	return fmt.Sprintf(`(sleep 300 & echo $! >> %[1]s/pids; sh -c 'sleep 301 & echo $! >> %[1]s/pids; wait' & wait) & sleep 0.3; echo started; sleep 300`, dir)
}

func assertGone(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "pids"))
	if err != nil {
		t.Fatal(err)
	}
	pids := strings.Fields(string(data))
	if len(pids) != 2 {
		t.Fatalf("pids: %q", data)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d survived", pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// alive reports a process that exists and is not a zombie waiting for its parent.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(st)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z"
}

func TestTimeoutKillsTree(t *testing.T) {
	t.Parallel()
	c := pair(t)
	dir := t.TempDir()
	req := shReq(dir, treeCmd(dir))
	// Long enough for the tree to be up (it prints "started" after 0.3 s) on a loaded machine:
	// the cancelling twin below waits for that line, a timeout cannot.
	req.Timeout = 4 * time.Second
	req.KillGrace = 200 * time.Millisecond
	res, err := c.Exec(ctxFor(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.Cancelled || res.ExitCode == 0 || !strings.Contains(string(res.Stdout), "started") {
		t.Errorf("result %+v", res)
	}
	assertGone(t, dir)
}

func TestCancelKillsTree(t *testing.T) {
	t.Parallel()
	c := pair(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(ctxFor(t))
	// Cancelled once the tree is up (its first line printed), however long that takes on a
	// loaded machine.
	started := make(chan string, 1)
	go func() {
		select {
		case <-started:
			cancel()
		case <-ctx.Done():
		}
	}()
	req := shReq(dir, treeCmd(dir))
	req.Stdout = &lineWriter{line: started}
	res, err := c.Exec(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cancelled || res.TimedOut || !strings.Contains(string(res.Stdout), "started") {
		t.Errorf("result %+v", res)
	}
	assertGone(t, dir)
}

func TestTermIgnoredThenKilled(t *testing.T) {
	t.Parallel()
	c := pair(t)
	req := shReq(t.TempDir(), "trap '' TERM; echo ready; while :; do sleep 0.05; done")
	req.Timeout = 300 * time.Millisecond
	req.KillGrace = 200 * time.Millisecond
	start := time.Now()
	res, err := c.Exec(ctxFor(t), req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != 128+int(syscall.SIGKILL) || time.Since(start) > 10*time.Second {
		t.Errorf("result %+v after %v", res, time.Since(start))
	}
}

func TestMissingProgramAndBadDir(t *testing.T) {
	t.Parallel()
	c := pair(t)
	dir := t.TempDir()
	res, err := c.Exec(ctxFor(t), Request{Argv: []string{"definitely-not-a-program-airlock"}, Dir: dir, Env: []string{"PATH=/bin"}})
	if err != nil || res.ExitCode != 127 {
		t.Errorf("missing program: %+v %v", res, err)
	}
	if _, err := c.Exec(ctxFor(t), Request{Argv: []string{"true"}, Dir: "relative"}); !errors.Is(err, backend.ErrInvalidRequest) {
		t.Errorf("relative dir: %v", err)
	}
	if err := os.Symlink("/etc", filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	_, err = c.Exec(ctxFor(t), Request{Argv: []string{"true"}, Dir: filepath.Join(dir, "out"), Workspace: dir})
	if !errors.Is(err, backend.ErrOutsideWorkspace) {
		t.Errorf("symlink out of the workspace: %v", err)
	}
}

// A start whose environment equals the previous one's is sent as SameEnv; the server runs
// it with the environment it kept, and a changed environment replaces the kept one.
func TestExecReusesAndReplacesTheEnvironment(t *testing.T) {
	t.Parallel()
	c := pair(t)
	dir := t.TempDir()
	for i, want := range []string{"1", "1", "2", "2", "1", ""} {
		req := shReq(dir, "printf %s \"$A\"")
		if want != "" {
			req.Env = append(req.Env, "A="+want)
		}
		res, err := c.Exec(ctxFor(t), req)
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Stdout) != want {
			t.Errorf("command %d: A=%q, want %q", i, res.Stdout, want)
		}
	}
	c.wmu.Lock()
	kept := slices.Clone(c.sentEnv)
	c.wmu.Unlock()
	if !slices.Equal(kept, []string{"PATH=/usr/bin:/bin"}) {
		t.Errorf("client kept %q as sent", kept)
	}
}

// A start that asks for the previous environment is refused when there was none, when it
// also carries one, and after a start that could not be decoded; the stream goes on.
func TestServerRefusesSameEnvWithoutOne(t *testing.T) {
	t.Parallel()
	start := func(in []byte, id uint32, payload []byte) []byte {
		return appendFrame(in, frame{typ: frameStart, id: id, payload: payload})
	}
	dir := t.TempDir()
	ok := startMsg{Argv: []string{"true"}, Dir: dir, Env: []string{"A=1"}, TimeoutMS: 20000}.encode()
	same := startMsg{Argv: []string{"true"}, Dir: dir, SameEnv: true, TimeoutMS: 20000}.encode()
	both := startMsg{Argv: []string{"true"}, Dir: dir, Env: []string{"A=1"}, SameEnv: true, TimeoutMS: 20000}.encode()
	in := appendFrame(nil, frame{typ: frameHello, payload: mustJSON(hello{Version: ProtocolVersion, Role: "client"})})
	in = start(in, 1, same) // none before
	in = start(in, 2, both)
	in = start(in, 3, ok)
	in = start(in, 4, []byte("{not a start"))
	in = start(in, 5, same) // the kept one was forgotten
	var out bytes.Buffer
	if err := Serve(context.Background(), bytes.NewReader(in), &out, ServeOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := readFrame(&out); err != nil { // hello
		t.Fatal(err)
	}
	exits := map[uint32]exitMsg{}
	for {
		f, err := readFrame(&out)
		if err != nil {
			break
		}
		if f.typ != frameExit {
			continue
		}
		if x, err := decodeExitMsg(f.payload); err == nil {
			exits[f.id] = x
		}
	}
	for id := uint32(1); id <= 5; id++ {
		x, found := exits[id]
		wantOK := id == 3
		switch {
		case !found:
			t.Errorf("request %d: no exit", id)
		case wantOK && x.Error != "": // run (Serve's end may have cancelled it since)
			t.Errorf("request %d: %+v, want it run", id, x)
		case !wantOK && x.ErrorKind != kindInvalid:
			t.Errorf("request %d: %+v, want it refused", id, x)
		}
	}
}

func TestServerRejectsMalformedFrames(t *testing.T) {
	t.Parallel()
	hi := appendFrame(nil, frame{typ: frameHello, payload: mustJSON(hello{Version: ProtocolVersion, Role: "client"})})
	tests := []struct {
		name  string
		input []byte
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\n\r\n")},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff, 'S', 0, 0, 0, 1}},
		{"short length", []byte{0, 0, 0, 1, 'S'}},
		{"no hello", appendFrame(nil, frame{typ: frameStart, id: 1, payload: []byte("{}")})},
		{"wrong version", appendFrame(nil, frame{typ: frameHello, payload: []byte(`{"version":99,"role":"client"}`)})},
		{"unknown type", append(hi, appendFrame(nil, frame{typ: 'Z', id: 1})...)},
		{"server-only type", append(append([]byte{}, hi...), appendFrame(nil, frame{typ: frameExit, id: 1})...)},
		{"id zero", append(append([]byte{}, hi...), appendFrame(nil, frame{typ: frameStart, id: 0, payload: []byte("{}")})...)},
		{"truncated", append(append([]byte{}, hi...), 0, 0, 0, 50, 'S')},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			err := Serve(context.Background(), bytes.NewReader(tc.input), &out, ServeOptions{})
			if err == nil {
				t.Errorf("no error")
			}
		})
	}
}

func TestServerAnswersBadStartAndGoesOn(t *testing.T) {
	t.Parallel()
	in := appendFrame(nil, frame{typ: frameHello, payload: mustJSON(hello{Version: ProtocolVersion, Role: "client"})})
	in = appendFrame(in, frame{typ: frameStart, id: 7, payload: []byte("{not a start")})
	var out bytes.Buffer
	if err := Serve(context.Background(), bytes.NewReader(in), &out, ServeOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := readFrame(&out); err != nil { // hello
		t.Fatal(err)
	}
	f, err := readFrame(&out)
	if err != nil || f.typ != frameExit || f.id != 7 {
		t.Fatalf("got %q %d %q %v", f.typ, f.id, f.payload, err)
	}
	if x, err := decodeExitMsg(f.payload); err != nil || x.ErrorKind != kindInvalid {
		t.Errorf("exit %+v %v, want it refused as %s", x, err, kindInvalid)
	}
}

func TestClientSurvivesBadServer(t *testing.T) {
	t.Parallel()
	for _, junk := range [][]byte{
		[]byte("not a frame at all"),
		appendFrame(nil, frame{typ: frameHello, payload: mustJSON(hello{Version: ProtocolVersion + 1, Role: "server"})}),
	} {
		cr, sw := io.Pipe()
		_, cw := io.Pipe()
		c := NewClient(cr, cw, ClientOptions{})
		go func() { _, _ = sw.Write(junk); _ = sw.Close() }()
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("client did not give up on a bad server")
		}
		if _, err := c.Exec(ctxFor(t), Request{Argv: []string{"true"}, Dir: "/"}); !errors.Is(err, backend.ErrUnavailable) {
			t.Errorf("exec on a dead stream: %v", err)
		}
		_ = c.Close()
	}
}

func TestServerStopsEverythingWhenStreamEnds(t *testing.T) {
	t.Parallel()
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- Serve(context.Background(), sr, sw, ServeOptions{}); _ = sw.Close() }()
	c := NewClient(cr, cw, ClientOptions{})
	dir := t.TempDir()
	execErr := make(chan error, 1)
	go func() {
		_, err := c.Exec(context.Background(), shReq(dir, treeCmd(dir)))
		execErr <- err
	}()
	for {
		if data, _ := os.ReadFile(filepath.Join(dir, "pids")); len(strings.Fields(string(data))) == 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = c.Close()
	if err := <-execErr; !errors.Is(err, backend.ErrUnavailable) {
		t.Errorf("exec in flight when closed: %v", err)
	}
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
	assertGone(t, dir)
}

// env adapts a Client to backend.Environment over a local workspace, so that the helper is
// held to the same conformance suite as every backend.
type env struct {
	c  *Client
	ws string

	mu     sync.Mutex
	closed bool
}

func (e *env) Exec(ctx context.Context, req backend.Request) (backend.Result, error) {
	if err := req.Validate(); err != nil {
		return backend.Result{}, err
	}
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return backend.Result{}, backend.ErrClosed
	}
	dir, err := backend.WorkDir(e.ws, req.Dir)
	if err != nil {
		return backend.Result{}, err
	}
	timeout := req.Timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	return e.c.Exec(ctx, Request{
		Argv: req.Argv, Command: req.Command, Dir: dir, Workspace: e.ws, Stdin: req.Stdin,
		Env:     backend.EnvPolicy{Passthrough: []string{"PATH"}}.Build(os.Environ(), req.Env),
		Timeout: timeout, KillGrace: 500 * time.Millisecond, MaxOutputBytes: req.MaxOutputBytes,
	})
}

func (e *env) Describe() backend.Description {
	return backend.Description{Kind: "helper-test", Workspace: e.ws,
		Capabilities: backend.Capabilities{ProcessTreeKill: true, ResidentHelper: true},
		Limits:       backend.Limits{DefaultTimeout: time.Minute, MaxOutputBytes: backend.DefaultMaxOutputBytes}}
}

func (e *env) Close(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	return nil
}

func TestConformanceOverPipes(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) backend.Environment {
		ws, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return &env{c: pair(t), ws: ws}
	})
}
