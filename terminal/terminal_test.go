package terminal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/tool"
)

// fakeEnv answers Exec with a canned result and records the request.
type fakeEnv struct {
	res backend.Result
	err error
	got backend.Request
}

func (f *fakeEnv) Exec(_ context.Context, r backend.Request) (backend.Result, error) {
	f.got = r
	return f.res, f.err
}
func (f *fakeEnv) Describe() backend.Description {
	return backend.Description{Kind: "fake", Workspace: "/ws"}
}
func (f *fakeEnv) Close(context.Context) error { return nil }

func TestRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		res         backend.Result
		err         error
		args        string
		status      tool.Status
		code        string
		content     string
		wantTimeout time.Duration
	}{
		{"ok", backend.Result{Stdout: []byte("hi\n")}, nil, `{"command":"echo hi"}`, tool.StatusOK, "", "hi\n", time.Minute},
		{"non-zero exit is a result", backend.Result{ExitCode: 3, Stderr: []byte("bad")}, nil, `{"command":"x"}`, tool.StatusOK, "",
			"[stderr]\nbad\n[exit code 3]\n", time.Minute},
		{"timeout", backend.Result{TimedOut: true, ExitCode: 143, Stdout: []byte("so far")}, nil, `{"command":"sleep 9","timeout":2}`,
			tool.StatusTimeout, "timeout", "so far\n[timed out after 2s; the command and its children were killed]\n", 2 * time.Second},
		{"cancelled", backend.Result{Cancelled: true, ExitCode: 143}, nil, `{"command":"sleep 9"}`, tool.StatusInterrupted, "interrupted", "[cancelled]\n", time.Minute},
		{"workdir outside", backend.Result{}, fmt.Errorf("x: %w", backend.ErrOutsideWorkspace), `{"command":"pwd","workdir":"/etc"}`,
			tool.StatusFailed, "outside_workspace", "", time.Minute},
		{"timeout capped", backend.Result{}, nil, `{"command":"true","timeout":86400}`, tool.StatusOK, "", "", time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := &fakeEnv{res: tc.res, err: tc.err}
			var a Args
			_ = json.Unmarshal([]byte(tc.args), &a)
			inv := &tool.Invocation{Args: json.RawMessage(tc.args), Env: env, Timeout: time.Minute, Paths: map[string]tool.ResolvedPath{}}
			if a.Workdir != "" {
				inv.Paths["workdir"] = tool.ResolvedPath{Arg: "workdir", Resolved: a.Workdir}
			}
			out, err := run(context.Background(), inv, Options{MaxTimeout: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != tc.status || out.ErrorCode != tc.code {
				t.Errorf("status %q code %q, want %q %q", out.Status, out.ErrorCode, tc.status, tc.code)
			}
			if tc.err == nil && out.Content != tc.content {
				t.Errorf("content %q, want %q", out.Content, tc.content)
			}
			if env.got.Timeout != tc.wantTimeout {
				t.Errorf("timeout sent %v, want %v", env.got.Timeout, tc.wantTimeout)
			}
			if a.Workdir != "" && env.got.Dir != a.Workdir {
				t.Errorf("dir %q: the resolved workdir was not used", env.got.Dir)
			}
		})
	}
}

func TestStreamFallback(t *testing.T) {
	t.Parallel()
	env := &fakeEnv{res: backend.Result{Stdout: []byte("out"), Stderr: []byte("err")}}
	var so, se bytes.Buffer
	ctx := tool.WithStream(context.Background(), &tool.Stream{Stdout: &so, Stderr: &se})
	inv := &tool.Invocation{Args: json.RawMessage(`{"command":"x"}`), Env: env, Timeout: time.Second}
	if _, err := run(ctx, inv, Options{MaxTimeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if so.String() != "out" || se.String() != "err" {
		t.Errorf("a backend that could not stream: watcher saw %q %q", so.String(), se.String())
	}
	env.res.Streamed = true
	so.Reset()
	if _, err := run(ctx, inv, Options{MaxTimeout: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if so.Len() != 0 {
		t.Errorf("streamed output shown twice: %q", so.String())
	}
}
