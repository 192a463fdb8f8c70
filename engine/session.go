package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/plan"
	"github.com/airlock-dev/airlock/receipt"
	"github.com/airlock-dev/airlock/session"
)

// CodeSessionClosed is the error code of a call made on a session that was closed or
// reaped: open it again with [Engine.Session].
const CodeSessionClosed = "session_closed"

// Session is one agent session of an engine. It is safe for concurrent use.
type Session struct {
	e     *Engine
	id    string
	named bool
	env   backend.Environment
	own   bool // the session opened env and closes it
	store *session.Store
	pipe  *pipeline.Pipeline
	// plan holds the session to its steps; nil without one.
	plan *plan.Plan

	// life ends when the session closes; the calls in flight are cancelled with it.
	life    context.Context
	endLife context.CancelFunc

	mu       sync.Mutex
	closed   bool
	inflight int
	idle     chan struct{} // closed when inflight drops to 0 after close began
	lastUsed time.Time
	// ttl, when set, is the session's own idle TTL in place of the engine's.
	ttl     time.Duration
	onClose []func()
	pending []approval.Prompt
	// done is closed once Close has released everything; the engine then forgets the session.
	done chan struct{}
}

func (e *Engine) openSession(ctx context.Context, id string, named bool, so sessionOptions) (*Session, error) {
	pl, err := e.sessionPlan(so)
	if err != nil {
		return nil, err
	}
	var store *session.Store
	if named && !e.opts.ephemeral {
		store, err = session.Open(e.cfg.SessionsDir(), id)
	} else {
		if err = session.CheckID(id); err == nil {
			store = session.NewMemory()
		}
	}
	if err != nil {
		return nil, err
	}
	key := ""
	if named {
		key = id
	}
	env, own, err := e.envs.forSession(ctx, key, id)
	if err != nil {
		_ = store.Close()
		return nil, fmt.Errorf("environment: %w", err)
	}
	s := &Session{e: e, id: id, named: named, env: env, own: own, store: store, plan: pl, lastUsed: e.opts.now(), done: make(chan struct{})}
	s.life, s.endLife = context.WithCancel(context.Background())
	stale := &session.StaleCheck{Store: store, Readers: []string{"read_file"}, Writers: []string{"write_file", "patch"}}
	s.pipe, err = pipeline.New(pipeline.Options{
		Registry:       e.reg,
		Env:            env,
		Ledger:         e.ledger,
		Logger:         e.log,
		Policy:         policies{paths: e.policy, more: s.checks()},
		Approval:       e.approvalStep(),
		StoreArguments: e.cfg.Ledger.StoreArguments,
		MaxOutputChars: e.cfg.Tools.MaxOutputChars,
		SessionID:      id,
		Session:        store,
		DenialBudget:   e.policy.DenialBudget(),
		PreHooks:       s.preHooks(stale),
		Tracer:         e.tracing.Tracer("github.com/airlock-dev/airlock/pipeline"),
		PostHooks:      s.postHooks(stale),
		NeverParallel:  e.cfg.Approvals.NeverParallel,
		PathScoped:     e.cfg.Approvals.PathScoped,
		MaxWorkers:     e.cfg.Approvals.MaxToolWorkers,
	})
	if err != nil {
		_ = s.end(ctx)
		return nil, err
	}
	return s, nil
}

// ID returns the session's ID.
func (s *Session) ID() string { return s.id }

// Environment returns the environment the session's calls run in.
func (s *Session) Environment() backend.Environment { return s.env }

// Denials returns how many of the session's calls were denied so far (its denial budget
// is the config's policy.denial_budget).
func (s *Session) Denials() int { return s.store.Denials() }

// Pending returns the session's calls that are waiting for a person now, oldest first.
func (s *Session) Pending() []approval.Prompt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]approval.Prompt(nil), s.pending...)
}

// OnClose registers fn to run when the session ends — closed, reaped or with the engine —
// after its calls have returned. Registered on a closed session, fn runs at once.
func (s *Session) OnClose(fn func()) {
	s.mu.Lock()
	if !s.closed {
		s.onClose = append(s.onClose, fn)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	fn()
}

// Run runs one call.
func (s *Session) Run(ctx context.Context, c pipeline.Call) pipeline.Result {
	return s.RunBatch(ctx, []pipeline.Call{c})[0]
}

// RunBatch runs a model's calls through the pipeline: results in input order, each with its
// receipt. The calls are cancelled when the session closes.
func (s *Session) RunBatch(ctx context.Context, calls []pipeline.Call) []pipeline.Result {
	out := make([]pipeline.Result, len(calls))
	s.RunBatchFunc(ctx, calls, func(i int, r pipeline.Result) { out[i] = r })
	return out
}

// RunBatchFunc runs a batch as [Session.RunBatch] does, handing each result to emit as soon
// as it may leave (see [pipeline.Pipeline.RunBatchFunc]): in input order, on the caller's
// goroutine, its receipt durable. A front end that writes results out as they come holds
// none of them for the whole batch.
func (s *Session) RunBatchFunc(ctx context.Context, calls []pipeline.Call, emit func(i int, r pipeline.Result)) {
	count := func(i int, r pipeline.Result) {
		s.e.countCall(r)
		emit(i, r)
	}
	if !s.begin() {
		s.refuseClosed(calls, count)
		return
	}
	defer s.finish()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.life, cancel)
	defer stop()
	s.pipe.RunBatchFunc(ctx, calls, count)
}

func (s *Session) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.inflight++
	s.lastUsed = s.e.opts.now()
	return true
}

func (s *Session) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inflight--
	s.lastUsed = s.e.opts.now()
	if s.inflight == 0 && s.idle != nil {
		close(s.idle)
		s.idle = nil
	}
}

// touch marks the session used; it reports false for a session that is closing.
func (s *Session) touch() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastUsed = s.e.opts.now()
	return !s.closed
}

// SetIdleTTL gives the session an idle TTL of its own in place of [session] idle_ttl (a
// front end extends a session for a client that will be away longer). It reports false when
// the engine closes no idle session at all.
func (s *Session) SetIdleTTL(d time.Duration) bool {
	if s.e.ttl <= 0 || d <= 0 {
		return false
	}
	s.mu.Lock()
	s.ttl = d
	s.lastUsed = s.e.opts.now()
	s.mu.Unlock()
	return true
}

// IdleTTL is the idle time after which the session closes; zero when it never does.
func (s *Session) IdleTTL() time.Duration {
	if s.e.ttl <= 0 {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ttl > 0 {
		return s.ttl
	}
	return s.e.ttl
}

// idleSince is how long the session has had no call running, zero while one runs.
func (s *Session) idleSince(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inflight > 0 || s.closed {
		return 0
	}
	return now.Sub(s.lastUsed)
}

// reapIfIdle closes the session when it is still idle past ttl; a call that began since the
// reaper looked keeps it open.
func (s *Session) reapIfIdle(now time.Time, ttl time.Duration) bool {
	s.mu.Lock()
	if s.closed || s.inflight > 0 || now.Sub(s.lastUsed) <= ttl {
		s.mu.Unlock()
		return false
	}
	s.mu.Unlock()
	if err := s.Close(context.Background()); err != nil {
		s.e.log.Warn("reaped session did not close cleanly", "session_id", s.id, "error", err)
	}
	return true
}

// refuseClosed answers calls made on a closed session, each with a receipt.
func (s *Session) refuseClosed(calls []pipeline.Call, emit func(int, pipeline.Result)) {
	for i, c := range calls {
		if c.ID == "" {
			c.ID = pipeline.GenerateCallID(c, i)
		}
		now := time.Now().UTC()
		rec := &receipt.Receipt{
			CallID: c.ID, ToolName: c.Name, SessionID: s.id, ArgumentsSHA256: receipt.HashArguments(c.Arguments),
			Decision: string(pipeline.Deny), ReasonCode: CodeSessionClosed, DecidedBy: "engine:session",
			Outcome: receipt.NotExecuted, Status: string(pipeline.StatusFailed), ErrorCode: CodeSessionClosed,
			ReceivedAt: now, DecidedAt: &now, FinishedAt: &now,
		}
		msg := fmt.Sprintf("session %s has ended (closed, or idle past its TTL); open it again", s.id)
		if err := s.e.ledger.Append(receipt.EventCompleted, rec); err != nil && !errors.Is(err, receipt.ErrClosed) {
			s.e.log.Error("ledger append failed", "call_id", c.ID, "error", err)
		}
		emit(i, pipeline.Result{
			CallID: c.ID, ToolName: c.Name, Status: pipeline.StatusFailed, ErrorCode: CodeSessionClosed,
			ErrorMessage: msg, Content: msg, Retryable: true, Receipt: rec,
		})
	}
}

// Close ends the session: its calls in flight are cancelled and waited for, the functions
// given to [Session.OnClose] run, its own environment closes, its state is saved and the
// gate forgets its cached approvals. It is safe to call more than once.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done // a Close in progress finishes first
		return nil
	}
	s.closed = true
	var idle chan struct{}
	if s.inflight > 0 {
		idle = make(chan struct{})
		s.idle = idle
	}
	hooks := s.onClose
	s.onClose = nil
	s.mu.Unlock()
	defer close(s.done)
	defer s.e.forget(s)
	s.endLife()
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
			s.e.log.Warn("session closed with calls still running", "session_id", s.id)
		}
	}
	for _, fn := range hooks {
		fn()
	}
	err := s.end(ctx)
	s.e.log.Debug("session closed", "session_id", s.id)
	return err
}

// end releases what the session holds.
func (s *Session) end(ctx context.Context) error {
	var errs []error
	if s.endLife != nil {
		s.endLife()
	}
	if s.own && s.env != nil {
		if err := s.env.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("session %s: close %s: %w", s.id, describe(s.env), err))
		}
	}
	if err := s.store.Close(); err != nil {
		errs = append(errs, err)
	}
	s.e.gate.ForgetSession(s.id)
	return errors.Join(errs...)
}

func (s *Session) addPending(p approval.Prompt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, p)
}

func (s *Session) removePending(callID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, p := range s.pending {
		if p.CallID == callID {
			s.pending = append(s.pending[:i], s.pending[i+1:]...)
			return
		}
	}
}

// Engine returns the engine the session belongs to.
func (s *Session) Engine() *Engine { return s.e }

// policies is a session's policy step: the path policy, then each further check (the URL
// guard) on a call it allowed. A refusal keeps the paths the path policy resolved.
type policies struct {
	paths pipeline.Policy
	more  []pipeline.Policy
}

// Prepare lets the path policy resolve a batch's paths ahead (see [pipeline.Preparer]).
func (p policies) Prepare(ctx context.Context, reqs []*pipeline.Request) func(context.Context) context.Context {
	if pr, ok := p.paths.(pipeline.Preparer); ok {
		return pr.Prepare(ctx, reqs)
	}
	return nil
}

func (p policies) Check(ctx context.Context, req *pipeline.Request) (pipeline.Verdict, error) {
	v, err := p.paths.Check(ctx, req)
	if err != nil || v.Decision != pipeline.Allow {
		return v, err
	}
	for _, m := range p.more {
		mv, err := m.Check(ctx, req)
		if err != nil {
			return mv, err
		}
		if mv.Decision != pipeline.Allow {
			mv.Paths = v.Paths
			return mv, nil
		}
	}
	return v, nil
}
