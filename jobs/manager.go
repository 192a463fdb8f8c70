package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/receipt"
)

// Sentinel errors callers branch on.
var (
	// ErrNotFound: no job with that ID in this session.
	ErrNotFound = errors.New("no such job")
	// ErrClosed: the manager was closed.
	ErrClosed = errors.New("job manager closed")
	// ErrTooMany: the session already runs as many jobs as it may.
	ErrTooMany = errors.New("too many running jobs")
)

// Ledger is where job events go; *receipt.Ledger implements it.
type Ledger interface {
	Append(event string, r *receipt.Receipt) error
}

// Options configure a [Manager]. The zero value is usable.
type Options struct {
	// Ledger receives job_started and job_ended events; nil keeps none.
	Ledger Ledger
	Logger hclog.Logger
	// BufferBytes caps the unread output kept per job; zero means 1 MiB. Output past it
	// drops the oldest unread bytes, counted in Info.DroppedBytes.
	BufferBytes int
	// MaxRunning bounds the running jobs of one session; zero means 16.
	MaxRunning int
	// DefaultTimeout bounds a job that asks for none; zero means one hour.
	DefaultTimeout time.Duration
	// KillWait is how long Kill waits for the environment to end the job; zero means 10s.
	KillWait time.Duration
}

// Manager runs background jobs. It is safe for concurrent use.
type Manager struct {
	opts Options
	log  hclog.Logger

	mu     sync.Mutex
	jobs   map[string]*Job // by ID
	closed bool
	wg     sync.WaitGroup
}

// NewManager returns a manager.
func NewManager(opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.BufferBytes <= 0 {
		opts.BufferBytes = 1 << 20
	}
	if opts.MaxRunning <= 0 {
		opts.MaxRunning = 16
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = time.Hour
	}
	if opts.KillWait <= 0 {
		opts.KillWait = 10 * time.Second
	}
	return &Manager{opts: opts, log: opts.Logger.Named("jobs"), jobs: map[string]*Job{}}
}

// Spec is a job to start.
type Spec struct {
	SessionID string
	CallID    string
	// ArgumentsSHA256 ties the job's ledger events to the call's arguments.
	ArgumentsSHA256 string
	Env             backend.Environment
	// Request is the command; its Stdout and Stderr are the manager's, and a zero Timeout
	// means the manager's default.
	Request backend.Request
	// Watch, when set, also gets the output as it arrives, until [Job.Unwatch]: a
	// foreground call that may become a job shows progress through it.
	Watch io.Writer
	// Deferred keeps the job out of the ledger and out of job_list until [Manager.Promote]:
	// a foreground command that ends in time is the starting call's business alone.
	Deferred bool
	// Stdin gives the job a standard input that [Job.Input] (job_input) writes to; without
	// it the job reads end of file at once, as a foreground command does.
	Stdin bool
}

// Start hands the command to the environment on a context of the job's own and returns at
// once. The job runs until it exits, times out, is killed, or its session or the manager
// is closed.
func (m *Manager) Start(spec Spec) (*Job, error) {
	if spec.Env == nil {
		return nil, errors.New("start job: environment is required")
	}
	req := spec.Request
	req.Stdin = nil
	if req.Timeout <= 0 {
		req.Timeout = m.opts.DefaultTimeout
	}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("start job: %w", err)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	running := 0
	for _, j := range m.jobs {
		if j.sessionID == spec.SessionID && !j.ended() {
			running++
		}
	}
	if running >= m.opts.MaxRunning {
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: this session already runs %d jobs; kill one or wait for one to end", ErrTooMany, running)
	}
	// The job outlives the call's context, but not its identity: a backend that names the
	// call (the egress proxy's per-call port) still can.
	ctx, cancel := context.WithCancel(backend.WithCall(context.Background(), spec.CallID))
	j := &Job{
		id: newID(), sessionID: spec.SessionID, callID: spec.CallID, argsHash: spec.ArgumentsSHA256,
		command: req.Command, dir: req.Dir, started: time.Now().UTC(),
		cancel: cancel, done: make(chan struct{}), buf: newBuffer(m.opts.BufferBytes),
		backend: spec.Env.Describe().Kind, timeout: req.Timeout,
		watch: spec.Watch, announced: !spec.Deferred,
	}
	if req.Command == "" {
		j.command = fmt.Sprintf("%q", req.Argv)
	}
	m.jobs[j.id] = j
	m.wg.Add(1)
	m.mu.Unlock()

	if !spec.Deferred {
		m.event(receipt.EventJobStarted, j)
	}
	req.Stdout, req.Stderr = j, j
	if spec.Stdin {
		pr, pw := io.Pipe()
		req.Stdin, j.stdin = pr, pw
	}
	if req.MaxOutputBytes == 0 {
		req.MaxOutputBytes = int64(m.opts.BufferBytes)
	}
	go m.run(ctx, j, spec.Env, req)
	return j, nil
}

func (m *Manager) run(ctx context.Context, j *Job, env backend.Environment, req backend.Request) {
	defer m.wg.Done()
	res, err := env.Exec(ctx, req)
	if err == nil && !res.Streamed {
		// The backend could not copy output live: what it kept arrives now.
		_, _ = j.Write(res.Stdout)
		if len(res.Stderr) > 0 {
			_, _ = j.Write([]byte("[stderr]\n"))
			_, _ = j.Write(res.Stderr)
		}
	}
	if j.finish(res, err) {
		m.event(receipt.EventJobEnded, j)
	}
	m.log.Debug("job ended", "job_id", j.id, "session_id", j.sessionID, "state", j.Info().State)
}

// Promote makes a deferred job an ordinary one: it is listed, and its job_started event
// (and job_ended, if it already ended) is written now.
func (m *Manager) Promote(j *Job) {
	j.mu.Lock()
	was := j.announced
	j.announced = true
	ended := j.ended()
	j.mu.Unlock()
	if was {
		return
	}
	m.event(receipt.EventJobStarted, j)
	if ended {
		m.event(receipt.EventJobEnded, j)
	}
}

// Forget drops a job from the manager; a running one goes on until it ends or is killed.
func (m *Manager) Forget(sessionID, id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if j, ok := m.jobs[id]; ok && j.sessionID == sessionID {
		delete(m.jobs, id)
	}
}

// Running counts the session's jobs that have not ended.
func (m *Manager) Running(sessionID string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, j := range m.jobs {
		if j.sessionID == sessionID && !j.ended() {
			n++
		}
	}
	return n
}

// Get returns the job with id in the session.
func (m *Manager) Get(sessionID, id string) (*Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jobs[id]
	if !ok || j.sessionID != sessionID || !j.isAnnounced() {
		return nil, fmt.Errorf("job %q: %w", id, ErrNotFound)
	}
	return j, nil
}

// List returns the session's jobs, oldest first.
func (m *Manager) List(sessionID string) []Info {
	m.mu.Lock()
	var js []*Job
	for _, j := range m.jobs {
		if j.sessionID == sessionID && j.isAnnounced() {
			js = append(js, j)
		}
	}
	m.mu.Unlock()
	out := make([]Info, 0, len(js))
	for _, j := range js {
		out = append(out, j.Info())
	}
	sort.Slice(out, func(a, b int) bool { return out[a].StartedAt.Before(out[b].StartedAt) })
	return out
}

// Kill ends a job with everything it started and waits, up to the manager's KillWait, for
// the environment to confirm.
func (m *Manager) Kill(ctx context.Context, sessionID, id string) (Info, error) {
	j, err := m.Get(sessionID, id)
	if err != nil {
		return Info{}, err
	}
	return m.Stop(ctx, j, "killed"), nil
}

// Stop kills j, saying why, and waits up to KillWait for it to end.
func (m *Manager) Stop(ctx context.Context, j *Job, why string) Info {
	j.kill(why)
	wctx, cancel := context.WithTimeout(ctx, m.opts.KillWait)
	defer cancel()
	_ = j.Wait(wctx)
	return j.Info()
}

// CloseSession kills the session's jobs, waits for them to end, and forgets them with
// their unread output.
func (m *Manager) CloseSession(ctx context.Context, sessionID string) {
	m.mu.Lock()
	var js []*Job
	for id, j := range m.jobs {
		if j.sessionID == sessionID {
			js = append(js, j)
			delete(m.jobs, id)
		}
	}
	m.mu.Unlock()
	m.killAll(ctx, js, "session_closed")
}

// Close kills every job and waits for them to end; Start fails afterwards.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	js := make([]*Job, 0, len(m.jobs))
	for _, j := range m.jobs {
		js = append(js, j)
	}
	m.jobs = map[string]*Job{}
	m.mu.Unlock()
	m.killAll(ctx, js, "closed")
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close jobs: %w", ctx.Err())
	}
}

func (m *Manager) killAll(ctx context.Context, js []*Job, why string) {
	for _, j := range js {
		j.kill(why)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.opts.KillWait)
	defer cancel()
	for _, j := range js {
		if err := j.Wait(wctx); err != nil {
			m.log.Warn("job did not end after kill", "job_id", j.id, "error", err)
		}
	}
}

// event writes a job's ledger line. A job event that cannot be written is logged: the job
// already runs (start) or already ended (end), and the starting call's own receipt stands.
func (m *Manager) event(name string, j *Job) {
	if m.opts.Ledger == nil {
		return
	}
	if err := m.opts.Ledger.Append(name, j.receipt()); err != nil {
		m.log.Error("ledger append failed", "job_id", j.id, "event", name, "error", err)
	}
}

func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "job_" + hex.EncodeToString(b[:])
}
