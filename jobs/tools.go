package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/tool"
)

// Tool names, part of the contract with models.
const (
	OutputTool = "job_output"
	WaitTool   = "job_wait"
	ListTool   = "job_list"
	KillTool   = "job_kill"
	InputTool  = "job_input"
)

// Toolset is the toolset the job tools belong to.
const Toolset = "jobs"

// ToolOptions bound the job tools.
type ToolOptions struct {
	// MaxReadBytes caps one read of a job's output; zero means 64 KiB.
	MaxReadBytes int
	// MaxWait bounds job_wait, so that a wait ends before the client's own tool timeout
	// (about 60 s in Claude Code and Codex); zero means 45 s.
	MaxWait time.Duration
}

const infoSchema = `{
  "type": "object",
  "required": ["job_id", "command", "state", "started_at", "total_bytes", "read_bytes", "dropped_bytes", "unread_bytes", "streaming"],
  "properties": {
    "job_id": {"type": "string"}, "command": {"type": "string"}, "workdir": {"type": "string"},
    "state": {"enum": ["running", "exited", "timed_out", "killed", "failed"]},
    "started_at": {"type": "string"}, "ended_at": {"type": "string"},
    "exit_code": {"type": "integer"}, "reason": {"type": "string"},
    "total_bytes": {"type": "integer", "minimum": 0}, "read_bytes": {"type": "integer", "minimum": 0},
    "dropped_bytes": {"type": "integer", "minimum": 0}, "unread_bytes": {"type": "integer", "minimum": 0},
    "streaming": {"type": "boolean"}
  }
}`

const offsetArg = `"offset": {"type": "integer", "minimum": 0, "description": "Read from this byte offset of everything the job wrote, without moving the cursor the reads without offset go by; the answer's offset says where it really starts (later when those bytes were dropped) and next_offset where to read on."}`

const idArg = `"job_id": {"type": "string", "minLength": 1, "maxLength": 64, "description": "The job_id terminal returned."}`

// Tools returns the job tools' definitions over m.
func Tools(m *Manager, opts ToolOptions) []tool.Definition {
	if opts.MaxReadBytes <= 0 {
		opts.MaxReadBytes = 64 << 10
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = tool.CallWaitMax
	}
	readArg := fmt.Sprintf(`"max_bytes": {"type": "integer", "minimum": 1, "maximum": %d, "description": "Most bytes of output to return (default and maximum %d)."}`, opts.MaxReadBytes, opts.MaxReadBytes)
	return []tool.Definition{
		outputTool(m, opts, readArg),
		waitTool(m, opts, readArg),
		listTool(m),
		killTool(m),
		inputTool(m, opts),
	}
}

// outputTool is job_output: the output a job wrote since the last read, or from an offset.
func outputTool(m *Manager, opts ToolOptions, readArg string) tool.Definition {
	return tool.Definition{
		Name: OutputTool,
		Description: "Read a background job's output written since the last read (never repeated, never skipped), " +
			"with its state and byte totals.",
		InputSchema:  json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["job_id"], "properties": {` + idArg + `, ` + readArg + `, ` + offsetArg + `}}`),
		OutputSchema: json.RawMessage(infoSchema),
		Risk:         tool.RiskRead, ParallelSafe: true, Toolset: Toolset, Output: tool.OutputPolicy{Mode: tool.Full},
		Handler: func(ctx context.Context, inv *tool.Invocation) (*tool.Output, error) {
			var a struct {
				JobID    string `json:"job_id"`
				MaxBytes int    `json:"max_bytes"`
				Offset   *int64 `json:"offset"`
			}
			if err := json.Unmarshal(inv.Args, &a); err != nil {
				return nil, fmt.Errorf("job_output: arguments: %w", err)
			}
			j, err := m.Get(inv.SessionID, a.JobID)
			if err != nil {
				return notFound(err), nil
			}
			if a.Offset != nil {
				return readAt(j, *a.Offset, a.MaxBytes, opts.MaxReadBytes), nil
			}
			return readOutput(j, a.MaxBytes, opts.MaxReadBytes), nil
		},
	}
}

// waitTool is job_wait: wait a while for a job to end, then read as job_output does.
func waitTool(m *Manager, opts ToolOptions, readArg string) tool.Definition {
	maxWait := int(opts.MaxWait / time.Second)
	return tool.Definition{
		Name: WaitTool,
		Description: fmt.Sprintf("Wait up to timeout seconds (at most %d) for a background job to end, then return "+
			"its state and the output written since the last read. A job still running is no error: call again.", maxWait),
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type": "object", "additionalProperties": false, "required": ["job_id"], "properties": {`+
			idArg+`, "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": %d, "description": "Seconds to wait (default and maximum %d)."}, `+readArg+`}}`, maxWait, maxWait)),
		OutputSchema: json.RawMessage(infoSchema),
		Risk:         tool.RiskRead, ParallelSafe: true, Toolset: Toolset, Output: tool.OutputPolicy{Mode: tool.Full},
		Timeout: opts.MaxWait + 5*time.Second,
		Handler: func(ctx context.Context, inv *tool.Invocation) (*tool.Output, error) {
			var a struct {
				JobID    string   `json:"job_id"`
				Timeout  *float64 `json:"timeout"`
				MaxBytes int      `json:"max_bytes"`
			}
			if err := json.Unmarshal(inv.Args, &a); err != nil {
				return nil, fmt.Errorf("job_wait: arguments: %w", err)
			}
			j, err := m.Get(inv.SessionID, a.JobID)
			if err != nil {
				return notFound(err), nil
			}
			wait := opts.MaxWait
			if a.Timeout != nil {
				wait = min(wait, time.Duration(*a.Timeout*float64(time.Second)))
			}
			wctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			_ = j.Wait(wctx)
			if ctx.Err() != nil {
				return &tool.Output{Status: tool.StatusInterrupted, ErrorCode: "interrupted",
					ErrorMessage: "the wait was cancelled; the job goes on"}, nil
			}
			return readOutput(j, a.MaxBytes, opts.MaxReadBytes), nil
		},
	}
}

// listTool is job_list: the session's jobs.
func listTool(m *Manager) tool.Definition {
	return tool.Definition{
		Name:         ListTool,
		Description:  "List this session's background jobs with their state, exit code and unread output.",
		InputSchema:  json.RawMessage(`{"type": "object", "additionalProperties": false, "properties": {}}`),
		OutputSchema: json.RawMessage(`{"type": "object", "required": ["jobs"], "properties": {"jobs": {"type": "array", "items": ` + infoSchema + `}}}`),
		Risk:         tool.RiskRead, ParallelSafe: true, Toolset: Toolset,
		Handler: func(ctx context.Context, inv *tool.Invocation) (*tool.Output, error) {
			list := m.List(inv.SessionID)
			var b strings.Builder
			if len(list) == 0 {
				b.WriteString("no background jobs in this session\n")
			}
			for _, in := range list {
				fmt.Fprintf(&b, "%s  %s  %s%s  unread %d bytes\n", in.ID, in.State, in.Command, exitText(in), in.UnreadBytes)
			}
			return &tool.Output{Content: b.String(), Data: map[string]any{"jobs": list}}, nil
		},
	}
}

// killTool is job_kill: a job and everything it started, killed.
func killTool(m *Manager) tool.Definition {
	return tool.Definition{
		Name:         KillTool,
		Description:  "Kill a background job and everything it started; its unread output stays readable.",
		InputSchema:  json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["job_id"], "properties": {` + idArg + `}}`),
		OutputSchema: json.RawMessage(infoSchema),
		Risk:         tool.RiskWrite, ParallelSafe: true, Toolset: Toolset,
		Handler: func(ctx context.Context, inv *tool.Invocation) (*tool.Output, error) {
			var a struct {
				JobID string `json:"job_id"`
			}
			if err := json.Unmarshal(inv.Args, &a); err != nil {
				return nil, fmt.Errorf("job_kill: arguments: %w", err)
			}
			in, err := m.Kill(ctx, inv.SessionID, a.JobID)
			if err != nil {
				return notFound(err), nil
			}
			return &tool.Output{Content: fmt.Sprintf("job %s: %s%s\n", in.ID, in.State, exitText(in)), Data: in, ExitCode: in.ExitCode}, nil
		},
	}
}

// inputTool is job_input: the agent's text to an interactive program. Whatever the program
// does with it is code the agent runs, so it is a shell-risk call: approved as the terminal
// would approve running code, with the text shown to the person asked.
func inputTool(m *Manager, opts ToolOptions) tool.Definition {
	return tool.Definition{
		Name: InputTool,
		Description: "Write to a background job's standard input (a line for a program that asks a question, e.g. \"yes\\n\"), " +
			"and with eof: true close it afterwards. Returns once the job took the input; read the answer with job_output or job_wait.",
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type": "object", "additionalProperties": false, "required": ["job_id"], "properties": {`+idArg+
			`, "data": {"type": "string", "maxLength": %d, "description": "The text to write, newline included when the program reads a line."}`+
			`, "eof": {"type": "boolean", "description": "Close the job's standard input after the data."}}}`, opts.MaxReadBytes)),
		OutputSchema: json.RawMessage(infoSchema),
		Risk:         tool.RiskShell, Toolset: Toolset,
		Subject: func(args json.RawMessage) (tool.Subject, error) {
			var a struct {
				JobID string `json:"job_id"`
				Data  string `json:"data"`
				EOF   bool   `json:"eof"`
			}
			if err := json.Unmarshal(args, &a); err != nil {
				return tool.Subject{}, fmt.Errorf("job_input: arguments: %w", err)
			}
			return tool.Subject{
				Fields: []tool.Field{{Name: "job", Value: a.JobID}, {Name: "input", Value: a.Data}, {Name: "eof", Value: fmt.Sprint(a.EOF)}},
				Key:    string(args), Session: "this exact input to this job",
			}, nil
		},
		Handler: func(ctx context.Context, inv *tool.Invocation) (*tool.Output, error) {
			var a struct {
				JobID string `json:"job_id"`
				Data  string `json:"data"`
				EOF   bool   `json:"eof"`
			}
			if err := json.Unmarshal(inv.Args, &a); err != nil {
				return nil, fmt.Errorf("job_input: arguments: %w", err)
			}
			j, err := m.Get(inv.SessionID, a.JobID)
			if err != nil {
				return notFound(err), nil
			}
			if err := j.Input(ctx, []byte(a.Data), a.EOF); err != nil {
				if errors.Is(err, ErrNoStdin) {
					return &tool.Output{Status: tool.StatusFailed, ErrorCode: "job_no_input", Data: j.Info(),
						ErrorMessage: err.Error() + "; only a job started with background: true takes input, until it ends or its input is closed"}, nil
				}
				if ctx.Err() != nil {
					return &tool.Output{Status: tool.StatusInterrupted, ErrorCode: "interrupted", ErrorMessage: err.Error()}, nil
				}
				return nil, err
			}
			in := j.Info()
			return &tool.Output{Content: fmt.Sprintf("job %s took %d bytes of input%s\n", in.ID, len(a.Data), map[bool]string{true: " and end of input"}[a.EOF]), Data: in}, nil
		},
	}
}

// Chunk is job_output's answer to a read by offset: the job's state and the bytes from
// Offset (later than asked when the bytes asked for were dropped) to NextOffset.
type Chunk struct {
	Info
	Offset     int64  `json:"offset"`
	NextOffset int64  `json:"next_offset"`
	Output     string `json:"output"`
}

func readAt(j *Job, offset int64, asked, limit int) *tool.Output {
	n := limit
	if asked > 0 && asked < n {
		n = asked
	}
	data, at, in := j.ReadAt(offset, n)
	c := Chunk{Info: in, Offset: at, NextOffset: at + int64(len(data)), Output: string(data)}
	var b strings.Builder
	b.Write(data)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[job %s %s%s; bytes %d to %d of %d written]\n", in.ID, in.State, exitText(in), c.Offset, c.NextOffset, in.TotalBytes)
	return &tool.Output{Content: b.String(), Data: c, ExitCode: in.ExitCode}
}

func notFound(err error) *tool.Output {
	if errors.Is(err, ErrNotFound) {
		return &tool.Output{Status: tool.StatusFailed, ErrorCode: "job_not_found", Retryable: true,
			ErrorMessage: err.Error() + " in this session; job_list shows the session's jobs"}
	}
	return &tool.Output{Status: tool.StatusFailed, ErrorCode: "job_error", ErrorMessage: err.Error()}
}

func readOutput(j *Job, asked, limit int) *tool.Output {
	n := limit
	if asked > 0 && asked < n {
		n = asked
	}
	text, in := j.Read(n)
	var b strings.Builder
	b.WriteString(text)
	if text != "" && !strings.HasSuffix(text, "\n") {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[job %s %s%s; %d bytes read of %d written", in.ID, in.State, exitText(in), in.ReadBytes, in.TotalBytes)
	if in.UnreadBytes > 0 {
		fmt.Fprintf(&b, ", %d more unread: read again", in.UnreadBytes)
	}
	if in.DroppedBytes > 0 {
		fmt.Fprintf(&b, ", %d dropped unread because the buffer was full", in.DroppedBytes)
	}
	if !in.Streaming && in.State == Running {
		b.WriteString(", this backend delivers output when the job ends")
	}
	b.WriteString("]\n")
	return &tool.Output{Content: b.String(), Data: in, ExitCode: in.ExitCode}
}

func exitText(in Info) string {
	switch {
	case in.ExitCode != nil && in.State == Exited:
		return fmt.Sprintf(" (exit code %d)", *in.ExitCode)
	case in.Reason != "":
		return " (" + in.Reason + ")"
	}
	return ""
}
