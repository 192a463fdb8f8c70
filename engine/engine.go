package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/jobs"
	"github.com/airlock-dev/airlock/metrics"
	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/receipt"
	"github.com/airlock-dev/airlock/shellrisk"
	"github.com/airlock-dev/airlock/telemetry"
	"github.com/airlock-dev/airlock/terminal"
	"github.com/airlock-dev/airlock/tool"
)

// ErrClosed is returned by [Engine.Session] after [Engine.Close].
var ErrClosed = errors.New("engine closed")

// closeTimeout bounds the cleanup of one session or of the engine when the caller's context
// has no deadline of its own.
const closeTimeout = 30 * time.Second

// Option adjusts construction.
type Option func(*options) error

type options struct {
	logger    hclog.Logger
	approver  approval.Approver
	ttl       *time.Duration
	ephemeral bool
	private   bool
	now       func() time.Time
	// promote turns long foreground commands into jobs ([jobs] promote_after).
	promote bool
	// serveMetrics serves [metrics] when it names a listen address (metrics.go).
	serveMetrics bool
	// countMetrics counts without serving: the front end serves [Engine.Metrics].
	countMetrics bool
	// pendingTTL, when set, makes the runtime keep questions for a person in the
	// approvals store (approvals.go).
	pendingTTL time.Duration
	// ledgerOpts are passed to receipt.Open for the runtime's ledger.
	ledgerOpts []receipt.Option
}

// WithLedgerOptions passes options to the runtime's ledger, such as
// [receipt.WithoutGroupCommit] to measure appends one at a time.
func WithLedgerOptions(opts ...receipt.Option) Option {
	return func(o *options) error {
		o.ledgerOpts = append(o.ledgerOpts, opts...)
		return nil
	}
}

// WithLogger sets the logger (default: none).
func WithLogger(l hclog.Logger) Option {
	return func(o *options) error {
		if l == nil {
			return errors.New("engine: nil logger")
		}
		o.logger = l
		return nil
	}
}

// WithApprover sets who is asked when a person must decide; [approval.Prompt.SessionID]
// says for which session. Without one, such calls are refused with approval_required.
func WithApprover(a approval.Approver) Option {
	return func(o *options) error {
		if a == nil {
			return errors.New("engine: nil approver")
		}
		o.approver = a
		return nil
	}
}

// WithSessionTTL overrides [session] idle_ttl: a session with no call for this long is
// closed. Zero or negative keeps sessions until they are closed.
func WithSessionTTL(d time.Duration) Option {
	return func(o *options) error {
		o.ttl = &d
		return nil
	}
}

// WithEphemeralSessions keeps every session's state in memory, named sessions included:
// nothing is written under the sessions directory.
func WithEphemeralSessions() Option {
	return func(o *options) error {
		o.ephemeral = true
		return nil
	}
}

// WithPrivateEnvironments gives every session an environment of its own, for a runtime
// that serves several callers (airlock serve): a backend that would otherwise share one
// environment among the sessions of one configuration (Docker's reuse_container) gives
// each session its own, so that one caller's commands never see another's processes or
// files outside the workspace. A backend with one environment for all (ssh) is unchanged;
// its Describe says so.
func WithPrivateEnvironments() Option {
	return func(o *options) error {
		o.private = true
		return nil
	}
}

// Engine is the runtime built from one config. It is safe for concurrent use.
type Engine struct {
	cfg    *configs.Config
	log    hclog.Logger
	opts   options
	ttl    time.Duration
	reg    *tool.Registry
	policy *pathpolicy.Policy
	gate   *approval.Gate
	ledger *receipt.Ledger
	envs   *environments
	// approvals keeps the questions for a person; nil unless [WithPendingApprovals].
	approvals *approvals
	// preHooks run in every session's pipeline after its own (stale_file).
	preHooks []pipeline.PreHook
	// checks run in every session's policy step after the path policy (the URL guard).
	checks []pipeline.Policy
	// jobs runs background jobs; nil when the jobs toolset is off.
	jobs *jobs.Manager
	// metrics counts calls and egress decisions, and metricsSrv serves them, when a
	// long-running front end asked for [metrics] (nil otherwise; counting on nil is a no-op).
	metrics    *metrics.Metrics
	metricsSrv *metrics.Server
	// tracing makes every session's call spans ([telemetry]); nil when traces are off.
	tracing *telemetry.Provider

	mu       sync.Mutex
	closed   bool
	sessions map[string]*Session

	stopReaper chan struct{}
	reaperDone chan struct{}
}

// New builds the runtime from a validated config: it opens the backend (or, for a backend
// with one environment per session, checks that it can), the ledger, the registry with every
// tool, the path policy and the approval gate. Nothing is half open on error.
func New(ctx context.Context, cfg *configs.Config, opts ...Option) (*Engine, error) {
	if cfg == nil {
		return nil, errors.New("engine: nil config")
	}
	o := options{logger: hclog.NewNullLogger(), now: time.Now}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	if o.pendingTTL > 0 && o.approver != nil {
		return nil, errors.New("engine: WithApprover and WithPendingApprovals are exclusive")
	}
	e := &Engine{
		cfg:      cfg,
		log:      o.logger,
		opts:     o,
		ttl:      cfg.Session.IdleTTL.D(),
		sessions: map[string]*Session{},
	}
	if o.ttl != nil {
		e.ttl = *o.ttl
	}
	if err := e.startMetrics(); err != nil {
		return nil, err
	}
	// Airlock's own files exist before the environment opens: a kernel sandbox keeps out
	// the protected paths it finds at start (and what appears in the directories holding
	// them), so a store created after it would be open to the agent's commands.
	var err error
	if e.ledger, err = receipt.Open(cfg.LedgerPath(), o.ledgerOpts...); err != nil {
		e.stopMetrics(ctx)
		return nil, fmt.Errorf("ledger.path: %w", err)
	}
	if err := mkSessionsDir(cfg.SessionsDir(), o.ephemeral); err != nil {
		_ = e.ledger.Close()
		e.stopMetrics(ctx)
		return nil, fmt.Errorf("sessions: %w", err)
	}
	if o.pendingTTL > 0 {
		if e.approvals, err = openApprovals(cfg.ApprovalsDir(), o.pendingTTL, e.log); err != nil {
			_ = e.ledger.Close()
			e.stopMetrics(ctx)
			return nil, fmt.Errorf("approvals: %w", err)
		}
		e.opts.approver = e.approvals
	}
	go warmUp(cfg.Approvals.Rules.IsZero(), e.enabled(terminal.Toolset))
	if e.envs, err = openEnvironments(ctx, cfg, e.log, e.metrics, o.private); err != nil {
		_ = e.ledger.Close()
		e.stopMetrics(ctx)
		return nil, fmt.Errorf("environment: %w", err)
	}
	if err := e.assemble(); err != nil {
		_ = e.ledger.Close()
		_ = e.envs.close(ctx)
		e.stopMetrics(ctx)
		return nil, err
	}
	if e.tracing, err = telemetry.New(ctx, cfg.Telemetry); err != nil {
		_ = e.ledger.Close()
		_ = e.envs.close(ctx)
		e.stopMetrics(ctx)
		return nil, err
	}
	if e.ttl > 0 {
		e.stopReaper, e.reaperDone = make(chan struct{}), make(chan struct{})
		go e.reap()
	}
	return e, nil
}

// warmUp makes the embedded classifier (~4 ms to build; rules: the configuration has no
// rules of its own) and the command tool's schemas (~0.9 ms, which its first call would
// compile; command: the terminal toolset is on). New runs it beside the environment's start,
// which mostly waits for another process; the gate and the tool take them, made, later. One
// goroutine, one after the other: on two cores the helper starting needs the other.
func warmUp(rules, command bool) {
	if rules {
		_, _ = shellrisk.NewClassifier(shellrisk.RulesConfig{})
	}
	if command {
		tool.Warm(terminal.Definition(terminal.Options{}))
	}
}

// mkSessionsDir makes the directory named sessions keep their state in, unless none is kept.
func mkSessionsDir(dir string, ephemeral bool) error {
	if ephemeral {
		return nil
	}
	return os.MkdirAll(dir, 0o700)
}

// Config returns the configuration the engine was built from.
func (e *Engine) Config() *configs.Config { return e.cfg }

// Registry returns the tools every session can call; [tool.Registry.Specs] gives the
// model-facing specs.
func (e *Engine) Registry() *tool.Registry { return e.reg }

// Sessions returns the IDs of the open sessions, sorted.
func (e *Engine) Sessions() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := make([]string, 0, len(e.sessions))
	for id := range e.sessions {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Session returns the open session id, or opens it. An empty id opens a new session with a
// generated ID whose state lives in memory only; a named session keeps its denial count and
// file hashes under the sessions directory, across processes, unless the engine was built
// with [WithEphemeralSessions]. Another process holding the same named session is an error
// wrapping [session.ErrInUse].
//
// Options apply when the session is opened, not when an open one is found again.
func (e *Engine) Session(ctx context.Context, id string, opts ...SessionOption) (*Session, error) {
	named := id != ""
	if !named {
		id = newSessionID()
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	if s, ok := e.sessions[id]; ok {
		e.mu.Unlock()
		if s.touch() {
			return s, nil
		}
		// It is closing: wait until it has let go of its state, then open it afresh.
		select {
		case <-s.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return e.Session(ctx, id, opts...)
	}
	e.mu.Unlock()

	var so sessionOptions
	for _, o := range opts {
		o(&so)
	}
	s, err := e.openSession(ctx, id, named, so)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	if _, ok := e.sessions[id]; ok || e.closed {
		// Another caller opened it at the same time, or the engine closed meanwhile.
		e.mu.Unlock()
		_ = s.end(ctx)
		if ok {
			return e.Session(ctx, id, opts...)
		}
		return nil, ErrClosed
	}
	e.sessions[id] = s
	e.mu.Unlock()
	e.watchJobs(s)
	e.log.Debug("session opened", "session_id", id, "named", named)
	return s, nil
}

func (e *Engine) forget(s *Session) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sessions[s.id] == s {
		delete(e.sessions, s.id)
	}
}

// Close ends every session (their calls are cancelled and waited for), then closes the
// backends and the ledger. It is safe to call more than once.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	sessions := make([]*Session, 0, len(e.sessions))
	for _, s := range e.sessions {
		sessions = append(sessions, s)
	}
	e.mu.Unlock()
	if e.stopReaper != nil {
		close(e.stopReaper)
		<-e.reaperDone
	}
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	errs := make([]error, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Close(ctx)
		}()
	}
	wg.Wait()
	errs = append(errs, e.closeJobs(ctx), e.envs.close(ctx), e.ledger.Close(), e.stopMetrics(ctx), e.tracing.Shutdown(ctx))
	return errors.Join(errs...)
}

// reap closes sessions idle for longer than the TTL.
func (e *Engine) reap() {
	defer close(e.reaperDone)
	every := min(max(e.ttl/4, 10*time.Millisecond), time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-e.stopReaper:
			return
		case <-t.C:
		}
		now := e.opts.now()
		e.mu.Lock()
		var idle []*Session
		for _, s := range e.sessions {
			if s.idleSince(now) > s.IdleTTL() && !e.runsJobs(s.id) {
				idle = append(idle, s)
			}
		}
		e.mu.Unlock()
		for _, s := range idle {
			if ttl := s.IdleTTL(); s.reapIfIdle(now, ttl) {
				e.log.Info("session reaped", "session_id", s.id, "idle_ttl", ttl.String())
			}
		}
	}
}

func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx = context.WithoutCancel(ctx)
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, closeTimeout)
}

func newSessionID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "s-" + hex.EncodeToString(b[:])
}

// describe is what a session's environment says of itself, for messages.
func describe(env backend.Environment) string {
	d := env.Describe()
	if d.Mode != "" {
		return d.Kind + " (" + d.Mode + ")"
	}
	return d.Kind
}
