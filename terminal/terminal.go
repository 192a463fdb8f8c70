package terminal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/jobs"
	"github.com/airlock-dev/airlock/receipt"
	"github.com/airlock-dev/airlock/tool"
)

// Name is the tool's name, part of the contract with models.
const Name = "terminal"

// Toolset is the toolset the tool belongs to.
const Toolset = "terminal"

// Options configure the tool.
type Options struct {
	// MaxTimeout caps the timeout a model may ask for; zero means one hour.
	MaxTimeout time.Duration
	// MaxOutputChars is what the model reads of one call; zero means the pipeline default.
	MaxOutputChars int
	// Jobs, when set, lets a call pass background: true to start a job and return at once.
	Jobs *jobs.Manager
	// PromoteAfter, when set with Jobs, turns a foreground command still running after it
	// into a background job: the call returns with the output so far and the job's ID
	// instead of running into the client's own tool timeout.
	PromoteAfter time.Duration
}

const inputSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["command"],
  "properties": {
    "command": {"type": "string", "minLength": 1, "maxLength": 100000,
      "description": "Shell command to run (POSIX sh). Runs in the workspace unless workdir is given."},
    "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": 86400,
      "description": "Seconds before the command and everything it started are killed. Defaults to the environment's timeout."},
    "workdir": {"type": "string", "minLength": 1,
      "description": "Directory to run in, relative to the workspace (or absolute inside it)."},
    "background": {"type": "boolean",
      "description": "Start the command as a background job and return at once with its job_id; read its output with job_output, wait with job_wait, write to its standard input with job_input (it waits for input there until job_input closes it), stop it with job_kill."}
  }
}`

const outputSchema = `{
  "oneOf": [
    {
      "type": "object",
      "additionalProperties": false,
      "required": ["exit_code", "timed_out", "truncated", "stdout_bytes", "stderr_bytes", "duration_ms"],
      "properties": {
        "exit_code": {"type": "integer"},
        "timed_out": {"type": "boolean"},
        "truncated": {"type": "boolean"},
        "stdout_bytes": {"type": "integer", "minimum": 0},
        "stderr_bytes": {"type": "integer", "minimum": 0},
        "duration_ms": {"type": "integer", "minimum": 0}
      }
    },
    {
      "type": "object",
      "additionalProperties": false,
      "required": ["background", "job_id", "state"],
      "properties": {
        "background": {"const": true},
        "job_id": {"type": "string"},
        "state": {"type": "string"},
        "promoted_after_ms": {"type": "integer", "minimum": 0},
        "exit_code": {"type": "integer"}
      }
    }
  ]
}`

// Args are the tool's arguments.
type Args struct {
	Command string   `json:"command"`
	Timeout *float64 `json:"timeout,omitempty"`
	Workdir string   `json:"workdir,omitempty"`
	// Background starts a job instead of waiting for the command.
	Background bool `json:"background,omitempty"`
}

// Definition returns the tool's definition.
func Definition(opts Options) tool.Definition {
	if opts.MaxTimeout <= 0 {
		opts.MaxTimeout = time.Hour
	}
	return tool.Definition{
		Name:    Name,
		Version: "1",
		Description: "Run a shell command in the workspace and return its output and exit code. " +
			"Long output is cut in the middle. Use the file tools to read, write or search files.",
		InputSchema:  json.RawMessage(inputSchema),
		OutputSchema: json.RawMessage(outputSchema),
		Risk:         tool.RiskShell,
		ParallelSafe: true,
		Output:       tool.OutputPolicy{MaxChars: opts.MaxOutputChars, Mode: tool.HeadTail},
		Paths:        paths,
		Subject:      subject,
		CallTimeout:  func(raw json.RawMessage, def time.Duration) time.Duration { return callTimeout(raw, def, opts) },
		Handler:      func(ctx context.Context, inv *tool.Invocation) (*tool.Output, error) { return run(ctx, inv, opts) },
		Toolset:      Toolset,
		Needs:        []tool.Need{{Programs: []string{"sh"}, Why: "commands run with sh -c"}},
	}
}

// paths declares the working directory, so that policy checks it like any other path.
func paths(raw json.RawMessage) ([]tool.PathRef, error) {
	var a Args
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, err
	}
	if a.Workdir == "" {
		return nil, nil
	}
	return []tool.PathRef{{Arg: "workdir", Path: a.Workdir, Access: tool.Read}}, nil
}

// subject is what a person approves of a command: the command and the directory it runs
// in. An approval for the session covers that exact command text run there again, with any
// timeout, in the foreground or as a job.
func subject(raw json.RawMessage) (tool.Subject, error) {
	var a Args
	if err := json.Unmarshal(raw, &a); err != nil {
		return tool.Subject{}, fmt.Errorf("terminal: arguments: %w", err)
	}
	dir := a.Workdir
	if dir == "" {
		dir = "."
	}
	s := tool.Subject{
		Command: a.Command,
		Fields:  []tool.Field{{Name: "command", Value: a.Command}, {Name: "workdir", Value: dir}},
		Key:     dir + "\x00" + a.Command,
		Session: "this exact command, run again in the same directory",
	}
	if a.Background {
		s.Fields = append(s.Fields, tool.Field{Name: "background", Value: "true"})
	}
	if a.Timeout != nil {
		s.Fields = append(s.Fields, tool.Field{Name: "timeout", Value: fmt.Sprintf("%gs", *a.Timeout)})
	}
	return s, nil
}

// callTimeout is the call's own timeout where it sets one, else def, capped at MaxTimeout.
func callTimeout(raw json.RawMessage, def time.Duration, opts Options) time.Duration {
	var a Args
	if err := json.Unmarshal(raw, &a); err == nil && a.Timeout != nil {
		def = time.Duration(*a.Timeout * float64(time.Second))
	}
	return min(def, opts.MaxTimeout)
}

// Command returns the command string of a terminal call's arguments.
func Command(raw json.RawMessage) string {
	var a Args
	_ = json.Unmarshal(raw, &a)
	return a.Command
}

func run(ctx context.Context, inv *tool.Invocation, opts Options) (*tool.Output, error) {
	var a Args
	if err := json.Unmarshal(inv.Args, &a); err != nil {
		return nil, fmt.Errorf("terminal: arguments: %w", err)
	}
	timeout := callTimeout(inv.Args, inv.Timeout, opts)
	req := backend.Request{Command: a.Command, Timeout: timeout}
	if rp, ok := inv.Paths["workdir"]; ok {
		req.Dir = rp.Resolved
	}
	if a.Background || (opts.Jobs != nil && opts.PromoteAfter > 0) {
		if opts.Jobs == nil {
			return &tool.Output{Status: tool.StatusFailed, ErrorCode: "jobs_disabled",
				ErrorMessage: "background jobs are not enabled here (toolset \"jobs\"); run the command in the foreground"}, nil
		}
		if a.Timeout == nil {
			req.Timeout = 0 // a job's own default, not a foreground call's
		}
		if a.Background {
			return startJob(inv, opts.Jobs, req)
		}
		return promoting(ctx, inv, opts, req, timeout)
	}
	if s := tool.StreamFrom(ctx); s != nil {
		req.Stdout, req.Stderr = s.Stdout, s.Stderr
	}
	res, err := inv.Env.Exec(ctx, req)
	return answer(inv, req, res, err, timeout)
}

// answer turns what the environment said into the tool's output.
func answer(inv *tool.Invocation, req backend.Request, res backend.Result, err error, timeout time.Duration) (*tool.Output, error) {
	if err == nil && !res.Streamed {
		showKept(req, res)
	}
	switch {
	case errors.Is(err, backend.ErrOutsideWorkspace):
		return &tool.Output{Status: tool.StatusFailed, ErrorCode: "outside_workspace", Retryable: true,
			ErrorMessage: "workdir must be inside the workspace " + inv.Env.Describe().Workspace}, nil
	case errors.Is(err, backend.ErrInvalidRequest):
		return &tool.Output{Status: tool.StatusFailed, ErrorCode: "invalid_request", Retryable: true,
			ErrorMessage: err.Error()}, nil
	case err != nil:
		return nil, fmt.Errorf("terminal: %w", err)
	}
	code := res.ExitCode
	out := &tool.Output{
		Content:   render(res, timeout),
		ExitCode:  &code,
		Truncated: res.Truncated,
		Notes:     res.Notes,
		Data: map[string]any{
			"exit_code": code, "timed_out": res.TimedOut, "truncated": res.Truncated,
			"stdout_bytes": res.StdoutBytes, "stderr_bytes": res.StderrBytes,
			"duration_ms": res.Duration.Milliseconds(),
		},
	}
	switch {
	case res.TimedOut:
		out.Status, out.ErrorCode, out.Retryable = tool.StatusTimeout, "timeout", true
		out.ErrorMessage = fmt.Sprintf("the command ran past its %s timeout and was killed with everything it started", timeout)
	case res.Cancelled:
		out.Status, out.ErrorCode = tool.StatusInterrupted, "interrupted"
		out.ErrorMessage = "the call was cancelled and the command killed"
	}
	return out, nil
}

// showKept gives a watcher the kept output of a backend that could not stream it live.
func showKept(req backend.Request, res backend.Result) {
	if req.Stdout != nil {
		_, _ = req.Stdout.Write(res.Stdout)
	}
	if req.Stderr != nil {
		_, _ = req.Stderr.Write(res.Stderr)
	}
}

// render lays out what the model reads: stdout, stderr under a header, and the exit code or
// timeout when they matter.
func render(res backend.Result, timeout time.Duration) string {
	var b strings.Builder
	b.Write(res.Stdout)
	if len(res.Stderr) > 0 {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString("[stderr]\n")
		b.Write(res.Stderr)
	}
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
	switch {
	case res.TimedOut:
		fmt.Fprintf(&b, "[timed out after %s; the command and its children were killed]\n", timeout)
	case res.Cancelled:
		b.WriteString("[cancelled]\n")
	case res.ExitCode != 0:
		fmt.Fprintf(&b, "[exit code %d]\n", res.ExitCode)
	}
	return b.String()
}

// startJob starts a background job and answers with its ID.
func startJob(inv *tool.Invocation, m *jobs.Manager, req backend.Request) (*tool.Output, error) {
	j, err := m.Start(jobs.Spec{SessionID: inv.SessionID, CallID: inv.CallID,
		ArgumentsSHA256: receipt.HashArguments(inv.Args), Env: inv.Env, Request: req, Stdin: true})
	if err != nil {
		return jobError(err), nil
	}
	return &tool.Output{
		Content: fmt.Sprintf("started background job %s\nread its output with job_output, wait with job_wait, answer its prompts with job_input, stop it with job_kill\n", j.ID()),
		Data:    map[string]any{"background": true, "job_id": j.ID(), "state": string(jobs.Running)},
	}, nil
}

func jobError(err error) *tool.Output {
	code := "job_error"
	switch {
	case errors.Is(err, jobs.ErrTooMany):
		code = "too_many_jobs"
	case errors.Is(err, backend.ErrInvalidRequest):
		code = "invalid_request"
	}
	return &tool.Output{Status: tool.StatusFailed, ErrorCode: code, Retryable: code == "too_many_jobs", ErrorMessage: err.Error()}
}

// promoting runs a foreground command as a job it may give up waiting for: if the command
// ends within opts.PromoteAfter (and within its own timeout) the call is answered as any
// foreground command; if it is still running, the call returns the output so far and the
// job's ID, and the command goes on as a background job. A cancelled call kills it.
func promoting(ctx context.Context, inv *tool.Invocation, opts Options, req backend.Request, timeout time.Duration) (*tool.Output, error) {
	req.Timeout = timeout
	spec := jobs.Spec{SessionID: inv.SessionID, CallID: inv.CallID, Deferred: true,
		ArgumentsSHA256: receipt.HashArguments(inv.Args), Env: inv.Env, Request: req}
	if s := tool.StreamFrom(ctx); s != nil && s.Stdout != nil {
		spec.Watch = s.Stdout
	}
	j, err := opts.Jobs.Start(spec)
	if err != nil {
		return jobError(err), nil
	}
	defer j.Unwatch()
	timer := time.NewTimer(opts.PromoteAfter)
	defer timer.Stop()
	select {
	case <-j.Done():
		res, err := j.Result()
		opts.Jobs.Forget(inv.SessionID, j.ID())
		return answer(inv, req, res, err, timeout)
	case <-ctx.Done():
		in := opts.Jobs.Stop(context.WithoutCancel(ctx), j, "cancelled")
		res, err := j.Result()
		opts.Jobs.Forget(inv.SessionID, j.ID())
		if err == nil && in.State != jobs.Running {
			res.Cancelled = true
		}
		return answer(inv, req, res, err, timeout)
	case <-timer.C:
	}
	j.Unwatch()
	opts.Jobs.Promote(j)
	text, in := j.Read(0)
	return &tool.Output{
		Content: text + fmt.Sprintf("\n[still running after %s: moved to background job %s; read more with job_output, wait with job_wait, stop it with job_kill]\n",
			opts.PromoteAfter, j.ID()),
		Data: map[string]any{"background": true, "job_id": j.ID(), "state": string(in.State),
			"promoted_after_ms": opts.PromoteAfter.Milliseconds()},
	}, nil
}
