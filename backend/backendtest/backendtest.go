// Package backendtest is the conformance suite every [backend.Environment] must pass against
// its real server: a local process tree, a Docker daemon, an sshd.
//
// A backend's test calls [Run] with a constructor; each case gets a fresh environment and
// works in a directory of its own inside the workspace, so cases may run in parallel and
// against a shared container or host. Commands use only POSIX sh and busybox applets, so the
// suite runs on minimal images.
package backendtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
)

// NewEnv builds a fresh environment for one test. It registers its own cleanup (Close) with
// t.Cleanup; the suite may Close it earlier, so Close must be idempotent.
type NewEnv func(t *testing.T) backend.Environment

// Run runs every conformance case against environments made by newEnv.
func Run(t *testing.T, newEnv NewEnv) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(t *testing.T, env backend.Environment)
	}{
		{"StdoutStderrApart", testStdoutStderr},
		{"ExitCodeIsResult", testExitCode},
		{"Argv", testArgv},
		{"ArgvMissingProgram", testArgvMissingProgram},
		{"Stdin", testStdin},
		{"LargeStdin", testLargeStdin},
		{"WorkdirRelative", testWorkdir},
		{"WorkdirOutsideRefused", testWorkdirOutside},
		{"ExtraEnv", testExtraEnv},
		{"SecretsNeverReachCommand", testSecrets},
		{"InvalidRequest", testInvalidRequest},
		{"TimeoutKillsTree", testTimeoutKillsTree},
		{"CancelKillsTree", testCancelKillsTree},
		{"OutputCappedWhileStreaming", testOutputCap},
		{"Concurrent", testConcurrent},
		{"Describe", testDescribe},
		{"CreatedFileModes", testCreatedModes},
		{"TimeoutQuiet", testTimeoutQuiet},
		{"BackgroundHoldsStdout", testBackgroundHoldsStdout},
		{"ExecAfterClose", testExecAfterClose},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			tc.fn(t, env)
		})
	}
}

func ctxFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Exec runs req and fails the test on error.
func Exec(t *testing.T, env backend.Environment, req backend.Request) backend.Result {
	t.Helper()
	res, err := env.Exec(ctxFor(t), req)
	if err != nil {
		t.Fatalf("exec %q %q: %v", req.Command, req.Argv, err)
	}
	return res
}

// Sh runs a shell command and returns its result, failing on error.
func Sh(t *testing.T, env backend.Environment, command string) backend.Result {
	t.Helper()
	return Exec(t, env, backend.Request{Command: command})
}

// MustSh runs a shell command that must exit 0 and returns its stdout.
func MustSh(t *testing.T, env backend.Environment, command string) string {
	t.Helper()
	res := Sh(t, env, command)
	if res.ExitCode != 0 {
		t.Fatalf("%q exited %d: stdout=%q stderr=%q", command, res.ExitCode, res.Stdout, res.Stderr)
	}
	return string(res.Stdout)
}

var dirSeq struct {
	sync.Mutex
	n int
}

// Scratch creates a fresh directory inside the workspace and returns its path relative to
// the workspace. It is removed when the test ends.
func Scratch(t *testing.T, env backend.Environment) string {
	t.Helper()
	dirSeq.Lock()
	dirSeq.n++
	name := fmt.Sprintf(".conformance-%d-%d-%d", os.Getpid(), time.Now().UnixNano()%1e9, dirSeq.n)
	dirSeq.Unlock()
	MustSh(t, env, "mkdir -p "+name)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = env.Exec(ctx, backend.Request{Command: "rm -rf " + name})
	})
	return name
}

func testStdoutStderr(t *testing.T, env backend.Environment) {
	res := Sh(t, env, "echo out; echo err >&2; echo out2")
	if got := string(res.Stdout); got != "out\nout2\n" {
		t.Errorf("stdout = %q, want %q", got, "out\nout2\n")
	}
	if got := string(res.Stderr); got != "err\n" {
		t.Errorf("stderr = %q, want %q", got, "err\n")
	}
	if res.ExitCode != 0 || res.Truncated || res.TimedOut || res.Cancelled {
		t.Errorf("result = %+v, want clean exit", res)
	}
	if res.StdoutBytes != 9 || res.StderrBytes != 4 {
		t.Errorf("byte counts = %d/%d, want 9/4", res.StdoutBytes, res.StderrBytes)
	}
	if res.Duration <= 0 {
		t.Errorf("duration = %v, want > 0", res.Duration)
	}
}

func testExitCode(t *testing.T, env backend.Environment) {
	for _, code := range []int{0, 1, 3, 42, 255} {
		res := Sh(t, env, "exit "+strconv.Itoa(code))
		if res.ExitCode != code {
			t.Errorf("exit %d: got %d", code, res.ExitCode)
		}
	}
	res := Sh(t, env, "definitely-not-a-program-airlock")
	if res.ExitCode != 127 {
		t.Errorf("missing program through the shell: exit %d, want 127", res.ExitCode)
	}
}

func testArgv(t *testing.T, env backend.Environment) {
	// Arguments with shell metacharacters arrive as they are: no shell sees them.
	arg := `$(echo no) ; 'quoted' "dq" * \ back`
	res := Exec(t, env, backend.Request{Argv: []string{"printf", "%s|", arg, "two words"}})
	want := arg + "|two words|"
	if string(res.Stdout) != want || res.ExitCode != 0 {
		t.Errorf("argv: stdout=%q exit=%d, want %q", res.Stdout, res.ExitCode, want)
	}
}

func testArgvMissingProgram(t *testing.T, env backend.Environment) {
	res, err := env.Exec(ctxFor(t), backend.Request{Argv: []string{"definitely-not-a-program-airlock"}})
	if err == nil && res.ExitCode == 0 {
		t.Fatalf("missing program ran: %+v", res)
	}
}

func testStdin(t *testing.T, env backend.Environment) {
	in := "line one\nline two\n\x00binary\xff\n"
	res := Exec(t, env, backend.Request{Command: "cat", Stdin: strings.NewReader(in)})
	if string(res.Stdout) != in {
		t.Errorf("stdin round trip = %q, want %q", res.Stdout, in)
	}
	// No stdin means an empty one, never the caller's terminal.
	res = Exec(t, env, backend.Request{Command: "cat; echo done"})
	if string(res.Stdout) != "done\n" {
		t.Errorf("without stdin: %q", res.Stdout)
	}
}

func testLargeStdin(t *testing.T, env backend.Environment) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 256*1024) // 4 MiB
	res := Exec(t, env, backend.Request{Command: "wc -c", Stdin: bytes.NewReader(data)})
	if got := strings.TrimSpace(string(res.Stdout)); got != strconv.Itoa(len(data)) {
		t.Errorf("wc -c of 4 MiB stdin = %q", got)
	}
}

func testWorkdir(t *testing.T, env backend.Environment) {
	dir := Scratch(t, env)
	MustSh(t, env, "mkdir -p "+dir+"/sub && echo hi > "+dir+"/sub/f")
	res := Exec(t, env, backend.Request{Command: "cat f; pwd", Dir: dir + "/sub"})
	ws := strings.TrimSuffix(env.Describe().Workspace, "/")
	want := "hi\n" + ws + "/" + dir + "/sub\n"
	if string(res.Stdout) != want {
		t.Errorf("workdir: %q, want %q", res.Stdout, want)
	}
	// An absolute path inside the workspace is accepted too.
	res = Exec(t, env, backend.Request{Command: "pwd", Dir: ws + "/" + dir})
	if got := strings.TrimSpace(string(res.Stdout)); got != ws+"/"+dir {
		t.Errorf("absolute workdir: %q", got)
	}
	// The default is the workspace.
	if got := strings.TrimSpace(MustSh(t, env, "pwd")); got != ws {
		t.Errorf("default workdir = %q, want %q", got, ws)
	}
}

func testWorkdirOutside(t *testing.T, env backend.Environment) {
	for _, dir := range []string{"..", "../..", "/", "/etc", "sub/../../x"} {
		_, err := env.Exec(ctxFor(t), backend.Request{Command: "pwd", Dir: dir})
		if !errors.Is(err, backend.ErrOutsideWorkspace) {
			t.Errorf("dir %q: err = %v, want ErrOutsideWorkspace", dir, err)
		}
	}
}

func testExtraEnv(t *testing.T, env backend.Environment) {
	res := Exec(t, env, backend.Request{
		Command: `printf '%s|%s' "$AIRLOCK_CONF_A" "$AIRLOCK_CONF_B"`,
		Env:     map[string]string{"AIRLOCK_CONF_A": "one", "AIRLOCK_CONF_B": "two words"},
	})
	if string(res.Stdout) != "one|two words" {
		t.Errorf("extra env: %q", res.Stdout)
	}
}

// SecretHostVars are set in the test process by testSecrets; a backend must not let any of
// them reach a command.
var SecretHostVars = map[string]string{
	"MY_API_TOKEN":          "airlock-secret-token-value",
	"AWS_SECRET_ACCESS_KEY": "airlock-secret-aws-value",
	"DB_PASSWORD":           "airlock-secret-db-value",
	"GH_AUTH":               "airlock-secret-auth-value",
	"SERVICE_CREDENTIALS":   "airlock-secret-cred-value",
	"api_key":               "airlock-secret-lower-value",
}

func testSecrets(t *testing.T, env backend.Environment) {
	for k, v := range SecretHostVars {
		t.Setenv(k, v)
	}
	res := Exec(t, env, backend.Request{
		Command: "env",
		Env:     map[string]string{"EXTRA_SECRET_TOKEN": "airlock-secret-extra-value", "PLAIN": "ok"},
	})
	out := string(res.Stdout)
	if !strings.Contains(out, "PLAIN=ok") {
		t.Errorf("plain extra variable missing from env:\n%s", out)
	}
	if strings.Contains(out, "airlock-secret") {
		t.Errorf("a secret reached the command:\n%s", out)
	}
}

func testInvalidRequest(t *testing.T, env backend.Environment) {
	for _, req := range []backend.Request{
		{},
		{Command: "true", Argv: []string{"true"}},
		{Argv: []string{""}},
		{Command: "true", Timeout: -1},
	} {
		_, err := env.Exec(ctxFor(t), req)
		if !errors.Is(err, backend.ErrInvalidRequest) {
			t.Errorf("%+v: err = %v, want ErrInvalidRequest", req, err)
		}
	}
}

// treeCommand starts two background grandchildren that would live 300 s, records their PIDs
// in dir/pids, then waits.
func treeCommand(dir string) string {
	return fmt.Sprintf(`(sleep 300 & echo $! >> %[1]s/pids; sh -c 'sleep 301 & echo $! >> %[1]s/pids; wait' & wait) & sleep 0.3; echo started; sleep 300`, dir)
}

// AssertNoSurvivors fails unless every PID listed in dir/pids is gone, waiting a little for
// the kill to land.
func AssertNoSurvivors(t *testing.T, env backend.Environment, dir string) {
	t.Helper()
	pids := strings.Fields(MustSh(t, env, "cat "+dir+"/pids"))
	if len(pids) < 2 {
		t.Fatalf("tree command recorded %d pids, want 2", len(pids))
	}
	check := `for p in ` + strings.Join(pids, " ") + `; do if kill -0 $p 2>/dev/null && ! grep -q '^State:.*Z' /proc/$p/status 2>/dev/null; then echo $p; fi; done`
	var alive string
	for i := 0; i < 50; i++ {
		alive = strings.TrimSpace(MustSh(t, env, check))
		if alive == "" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("processes survived the kill: %s", alive)
}

func testTimeoutKillsTree(t *testing.T, env backend.Environment) {
	dir := Scratch(t, env)
	res := Exec(t, env, backend.Request{Command: treeCommand(dir), Timeout: 1500 * time.Millisecond})
	if !res.TimedOut {
		t.Errorf("TimedOut = false: %+v", res)
	}
	if res.Cancelled {
		t.Errorf("Cancelled set on a timeout")
	}
	if res.ExitCode == 0 {
		t.Errorf("exit code 0 for a killed command")
	}
	if !strings.Contains(string(res.Stdout), "started") {
		t.Errorf("output captured before the kill was lost: %q", res.Stdout)
	}
	AssertNoSurvivors(t, env, dir)
}

func testCancelKillsTree(t *testing.T, env backend.Environment) {
	dir := Scratch(t, env)
	ctx, cancel := context.WithCancel(ctxFor(t))
	go func() {
		time.Sleep(1500 * time.Millisecond)
		cancel()
	}()
	res, err := env.Exec(ctx, backend.Request{Command: treeCommand(dir)})
	if err != nil {
		t.Fatalf("cancelled exec returned error %v, want a result", err)
	}
	if !res.Cancelled || res.TimedOut {
		t.Errorf("Cancelled=%v TimedOut=%v, want cancelled only", res.Cancelled, res.TimedOut)
	}
	if !strings.Contains(string(res.Stdout), "started") {
		t.Errorf("output captured before the cancel was lost: %q", res.Stdout)
	}
	AssertNoSurvivors(t, env, dir)
}

func testOutputCap(t *testing.T, env backend.Environment) {
	const capBytes = 64 << 10
	// 64 MiB of output against a 64 KiB cap, with a recognisable first and last line.
	cmd := `echo FIRST-LINE; head -c 67108864 /dev/zero | tr '\0' x; echo; echo LAST-LINE`
	res := Exec(t, env, backend.Request{Command: cmd, MaxOutputBytes: capBytes})
	if !res.Truncated {
		t.Fatalf("Truncated = false for 64 MiB of output")
	}
	out := string(res.Stdout)
	if len(out) > capBytes+256 {
		t.Errorf("kept %d bytes, cap %d", len(out), capBytes)
	}
	if !strings.HasPrefix(out, "FIRST-LINE\n") || !strings.HasSuffix(out, "LAST-LINE\n") {
		t.Errorf("head or tail lost: %q ... %q", out[:min(len(out), 40)], out[max(0, len(out)-40):])
	}
	if !strings.Contains(out, "airlock:") || !strings.Contains(out, "truncated") {
		t.Errorf("no truncation marker in output")
	}
	if res.StdoutBytes < 64<<20 {
		t.Errorf("StdoutBytes = %d, want the full count", res.StdoutBytes)
	}
}

func testConcurrent(t *testing.T, env backend.Environment) {
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			want := fmt.Sprintf("call-%d-%s", i, strings.Repeat("y", i*100))
			res, err := env.Exec(ctxFor(t), backend.Request{Command: "echo " + want + "; echo e" + strconv.Itoa(i) + " >&2"})
			switch {
			case err != nil:
				errs <- err
			case string(res.Stdout) != want+"\n" || string(res.Stderr) != "e"+strconv.Itoa(i)+"\n":
				errs <- fmt.Errorf("call %d: mixed output %q / %q", i, res.Stdout, res.Stderr)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func testDescribe(t *testing.T, env backend.Environment) {
	d := env.Describe()
	if d.Kind == "" {
		t.Errorf("Describe().Kind is empty")
	}
	if !strings.HasPrefix(d.Workspace, "/") {
		t.Errorf("Describe().Workspace = %q, want an absolute path", d.Workspace)
	}
	if !d.Capabilities.ProcessTreeKill {
		t.Errorf("ProcessTreeKill = false: every backend must kill the whole tree")
	}
	if d.Limits.DefaultTimeout <= 0 || d.Limits.MaxOutputBytes <= 0 {
		t.Errorf("limits not reported: %+v", d.Limits)
	}
}

func testExecAfterClose(t *testing.T, env backend.Environment) {
	if err := env.Close(ctxFor(t)); err != nil {
		t.Fatalf("close: %v", err)
	}
	if err := env.Close(ctxFor(t)); err != nil {
		t.Errorf("second close: %v", err)
	}
	_, err := env.Exec(ctxFor(t), backend.Request{Command: "true"})
	if !errors.Is(err, backend.ErrClosed) {
		t.Errorf("exec after close: err = %v, want ErrClosed", err)
	}
}
