package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/receipt"
)

// State is where a job is.
type State string

// States.
const (
	Running  State = "running"
	Exited   State = "exited"    // ran to its end, with an exit code
	TimedOut State = "timed_out" // its timeout killed it
	Killed   State = "killed"    // job_kill, its session's end or Close killed it
	Failed   State = "failed"    // the environment could not run it
)

// Job is one background command.
type Job struct {
	id, sessionID, callID, argsHash string
	command, dir, backend           string
	timeout                         time.Duration
	started                         time.Time
	cancel                          context.CancelFunc
	done                            chan struct{}
	buf                             *buffer

	mu    sync.Mutex
	watch io.Writer
	// stdin is the write end of the job's standard input; nil for a job that takes none.
	stdin     *io.PipeWriter
	announced bool
	killedBy  string // why it was killed, when it was
	res       backend.Result
	err       error
	endedAt   time.Time
}

// ID returns the job's ID.
func (j *Job) ID() string { return j.id }

// Info is what a model is told about a job.
type Info struct {
	ID        string     `json:"job_id"`
	Command   string     `json:"command"`
	Workdir   string     `json:"workdir,omitempty"`
	State     State      `json:"state"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	ExitCode  *int       `json:"exit_code,omitempty"`
	// Reason says why a job was killed or failed.
	Reason string `json:"reason,omitempty"`
	// TotalBytes is everything the job wrote; ReadBytes how much of it was read; DroppedBytes
	// what was dropped unread because the buffer was full; UnreadBytes what waits in it.
	TotalBytes   int64 `json:"total_bytes"`
	ReadBytes    int64 `json:"read_bytes"`
	DroppedBytes int64 `json:"dropped_bytes"`
	UnreadBytes  int64 `json:"unread_bytes"`
	// Streaming is false when the backend delivers output only when the job ends.
	Streaming bool `json:"streaming"`
}

func (j *Job) ended() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// Done is closed when the job has ended.
func (j *Job) Done() <-chan struct{} { return j.done }

// Wait blocks until the job ends or ctx does.
func (j *Job) Wait(ctx context.Context) error {
	select {
	case <-j.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for job %s: %w", j.id, ctx.Err())
	}
}

// Read returns up to max bytes of output written since the last read (never cutting a
// UTF-8 character) and the job's state after the read.
func (j *Job) Read(max int) (string, Info) {
	out := j.buf.take(max)
	return out, j.Info()
}

// ReadAt returns up to max bytes of output from offset, without moving the cursor that
// [Job.Read] reads by, and the offset they start at: later than asked when what was asked
// for no longer is in the buffer ([Options.BufferBytes] keeps the last bytes written).
func (j *Job) ReadAt(offset int64, max int) ([]byte, int64, Info) {
	out, at := j.buf.readAt(offset, max)
	return out, at, j.Info()
}

// ErrNoStdin: the job has no standard input to write to (it began as a foreground
// command, or its input was closed).
var ErrNoStdin = errors.New("the job takes no input")

// Input writes data to the job's standard input and, with eof, closes it afterwards. It
// returns when the environment has taken the bytes, the job ended, or ctx is done.
func (j *Job) Input(ctx context.Context, data []byte, eof bool) error {
	j.mu.Lock()
	w := j.stdin
	if eof {
		j.stdin = nil
	}
	j.mu.Unlock()
	if w == nil {
		return fmt.Errorf("job %s: %w", j.id, ErrNoStdin)
	}
	done := make(chan error, 1)
	go func() {
		var err error
		if len(data) > 0 {
			_, err = w.Write(data)
		}
		if eof {
			err = errors.Join(err, w.Close())
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("job %s: input: %w", j.id, err)
		}
		return nil
	case <-j.done:
		return fmt.Errorf("job %s: ended before it read the input: %w", j.id, ErrNoStdin)
	case <-ctx.Done():
		return fmt.Errorf("job %s: input: %w", j.id, ctx.Err())
	}
}

// Result returns the environment's result of an ended job: what a foreground command is
// answered with.
func (j *Job) Result() (backend.Result, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.res, j.err
}

// Info reports the job's state.
func (j *Job) Info() Info {
	total, read, dropped, unread := j.buf.counts()
	in := Info{
		ID: j.id, Command: j.command, Workdir: j.dir, State: Running, StartedAt: j.started,
		TotalBytes: total, ReadBytes: read, DroppedBytes: dropped, UnreadBytes: unread,
		Streaming: true,
	}
	if !j.ended() {
		return in
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	end := j.endedAt
	in.EndedAt = &end
	in.Streaming = j.err == nil && j.res.Streamed
	switch {
	case j.err != nil:
		in.State, in.Reason = Failed, j.err.Error()
	case j.killedBy != "" && (j.res.Cancelled || j.res.ExitCode != 0):
		in.State, in.Reason = Killed, j.killedBy
	case j.res.TimedOut:
		in.State, in.Reason = TimedOut, fmt.Sprintf("ran past its %s timeout", j.timeout)
	default:
		in.State = Exited
	}
	if j.err == nil {
		code := j.res.ExitCode
		in.ExitCode = &code
	}
	return in
}

func (j *Job) kill(why string) {
	j.mu.Lock()
	if j.killedBy == "" && !j.ended() {
		j.killedBy = why
	}
	j.mu.Unlock()
	j.cancel()
}

// finish records the end and reports whether the job_ended event is due now (a deferred
// job writes it when promoted).
func (j *Job) finish(res backend.Result, err error) bool {
	j.mu.Lock()
	j.res, j.err, j.endedAt = res, err, time.Now().UTC()
	close(j.done)
	if j.stdin != nil {
		_ = j.stdin.CloseWithError(ErrNoStdin)
		j.stdin = nil
	}
	announced := j.announced
	j.mu.Unlock()
	j.cancel()
	return announced
}

func (j *Job) isAnnounced() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.announced
}

// Write takes the job's output from the environment: into the buffer, and to the watcher
// while there is one. A watcher's failure never stops the job.
func (j *Job) Write(p []byte) (int, error) {
	_, _ = j.buf.Write(p)
	j.mu.Lock()
	w := j.watch
	j.mu.Unlock()
	if w != nil {
		_, _ = w.Write(p)
	}
	return len(p), nil
}

// Unwatch stops copying output to the Spec's Watch writer.
func (j *Job) Unwatch() {
	j.mu.Lock()
	j.watch = nil
	j.mu.Unlock()
}

// receipt is the job's ledger record: the starting call's ID, what was decided for it is in
// that call's own receipt; this one says what happened to the job.
func (j *Job) receipt() *receipt.Receipt {
	start := j.started
	r := &receipt.Receipt{
		CallID: j.callID, ToolName: "terminal", SessionID: j.sessionID, JobID: j.id,
		ArgumentsSHA256: j.argsHash, Decision: "allow", DecidedBy: "call:" + j.callID,
		DispatchStarted: true, HandlerStarted: true, Outcome: receipt.Interrupted,
		Status: "running", Backend: j.backend, ReceivedAt: start, StartedAt: &start,
	}
	if !j.ended() {
		return r
	}
	in := j.Info()
	r.FinishedAt = in.EndedAt
	r.ExitCode = in.ExitCode
	switch in.State {
	case Exited:
		r.Outcome, r.Status = receipt.Executed, "ok"
	case TimedOut:
		r.Outcome, r.Status, r.ErrorCode = receipt.Timeout, "timeout", "timeout"
	case Killed:
		r.Outcome, r.Status, r.ErrorCode = receipt.Interrupted, "interrupted", in.Reason
	default:
		r.Outcome, r.Status, r.ErrorCode = receipt.ExecutionFailed, "failed", "handler_failed"
	}
	return r
}

// buffer keeps a job's output, bounded: a window of the last max bytes written, with a
// read cursor. Bytes that leave the window before the cursor reached them are dropped and
// counted; those already read stay in the window, so that a reader by offset (the HTTP API)
// can read again what the model already read. It is the job's Stdout and Stderr at once, so
// the two streams interleave in the order the backend delivered them.
type buffer struct {
	mu       sync.Mutex
	max      int
	data     []byte // the window: bytes [total-len(data), total)
	total    int64
	pos      int64 // offset of the next unread byte
	consumed int64
	dropped  int64
}

func newBuffer(max int) *buffer { return &buffer{max: max} }

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += int64(len(p))
	b.data = append(b.data, p...)
	if over := len(b.data) - b.max; over > 0 {
		b.data = append(b.data[:0:0], b.data[over:]...)
	}
	if start := b.total - int64(len(b.data)); b.pos < start {
		b.dropped += start - b.pos
		b.pos = start
	}
	return len(p), nil
}

func (b *buffer) take(max int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	unread := b.data[b.pos-(b.total-int64(len(b.data))):]
	n := len(unread)
	if max > 0 && n > max {
		n = max
		// Never cut a character in two: back up to the start of the one at the cut.
		for n > 0 && !utf8.RuneStart(unread[n]) {
			n--
		}
		if n == 0 {
			n = max
		}
	}
	out := string(unread[:n])
	b.pos += int64(n)
	b.consumed += int64(n)
	return out
}

// readAt returns up to max bytes from offset without moving the read cursor, and the
// offset they start at: later than asked when the bytes asked for left the window.
func (b *buffer) readAt(offset int64, max int) ([]byte, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	start := b.total - int64(len(b.data))
	offset = min(max64(offset, start), b.total)
	out := b.data[offset-start:]
	if max > 0 && len(out) > max {
		out = out[:max]
	}
	return append([]byte(nil), out...), offset
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

func (b *buffer) counts() (total, read, dropped, unread int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total, b.consumed, b.dropped, b.total - b.pos
}
