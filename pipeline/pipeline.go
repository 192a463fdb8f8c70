package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/concurrency"
	"github.com/airlock-dev/airlock/receipt"
	"github.com/airlock-dev/airlock/tool"
)

// Ledger is where receipts go; *receipt.Ledger implements it.
type Ledger interface {
	Append(event string, r *receipt.Receipt) error
}

// AsyncLedger is a Ledger that can queue a line without waiting for it to be durable
// (*receipt.Ledger does). The pipeline queues a call's completed line this way, so that a
// worker of a batch dispatches its next call while the line is being committed (often with
// that call's dispatched line, in one fsync), and waits for a call's completed line before
// its result leaves the batch: no result leaves before its receipt is durable, and no call
// runs before its dispatched line is.
type AsyncLedger interface {
	Ledger
	AppendAsync(event string, r *receipt.Receipt) (wait func() error)
}

// Options configure a Pipeline. Registry, Env, Policy and Approval are required.
type Options struct {
	Registry *tool.Registry
	Env      backend.Environment
	// Ledger receives every receipt; nil keeps them only in results.
	Ledger    Ledger
	Policy    Policy
	Approval  Approval
	PreHooks  []PreHook
	PostHooks []PostHook
	Logger    hclog.Logger
	// StoreArguments keeps raw arguments in receipts; otherwise only their hash.
	StoreArguments bool
	// MaxOutputChars applies to tools whose output policy sets no limit.
	MaxOutputChars int
	// SessionID ties calls together for denial budgets and approvals cached per session.
	SessionID string
	// Session keeps per-session state; nil keeps it in memory for the pipeline's life.
	Session Session
	// DenialBudget is how many denials a session may collect before every further call is
	// refused with denial_budget_exhausted; zero means 20, negative means no budget.
	DenialBudget int
	// MaxWorkers bounds how many calls of a batch run at once; zero means 8.
	MaxWorkers int
	// NeverParallel names tools that run alone: everything before finishes first.
	NeverParallel []string
	// PathScoped names the tools whose scheduling follows the paths they touch; nil means
	// every tool. A tool outside the list is scheduled as if it named no paths.
	PathScoped []string
	// Tracer makes each call's spans (see trace.go); nil traces nothing.
	Tracer trace.Tracer
}

// Pipeline runs tool calls. It is safe for concurrent use.
type Pipeline struct {
	opts    Options
	log     hclog.Logger
	sched   *concurrency.Scheduler
	session Session
	backend string
	never   map[string]bool
	scoped  map[string]bool // nil: every tool is path-scoped
	tracer  trace.Tracer    // the options' Tracer, or one that records nothing
}

// New checks opts and returns a pipeline.
func New(opts Options) (*Pipeline, error) {
	if opts.Registry == nil {
		return nil, errors.New("pipeline: registry is required")
	}
	if opts.Env == nil {
		return nil, errors.New("pipeline: environment is required")
	}
	// Fail closed by construction: nothing is built with an allow-all default.
	if opts.Policy == nil {
		return nil, errors.New("pipeline: a path policy is required")
	}
	if opts.Approval == nil {
		return nil, errors.New("pipeline: an approval step is required")
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.MaxOutputChars <= 0 {
		opts.MaxOutputChars = 50000
	}
	if opts.DenialBudget == 0 {
		opts.DenialBudget = 20
	}
	if opts.Session == nil {
		opts.Session = NewMemorySession()
	}
	sched, err := concurrency.New(concurrency.Options{MaxWorkers: opts.MaxWorkers})
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	never := map[string]bool{}
	for _, n := range opts.NeverParallel {
		never[n] = true
	}
	var scoped map[string]bool
	if opts.PathScoped != nil {
		scoped = map[string]bool{}
		for _, n := range opts.PathScoped {
			scoped[n] = true
		}
	}
	return &Pipeline{
		opts:    opts,
		log:     opts.Logger.Named("pipeline"),
		sched:   sched,
		session: opts.Session,
		backend: opts.Env.Describe().Kind,
		tracer:  tracerOf(opts),
		never:   never,
		scoped:  scoped,
	}, nil
}

// Registry returns the pipeline's tool registry.
func (p *Pipeline) Registry() *tool.Registry { return p.opts.Registry }

// Run runs one call.
func (p *Pipeline) Run(ctx context.Context, c Call) Result {
	return p.RunBatch(ctx, []Call{c})[0]
}

// flight is one call on its way through the pipeline.
type flight struct {
	call    Call
	tool    *tool.Tool
	req     *Request
	rec     *receipt.Receipt
	result  *Result // set once the call is over
	started time.Time
	decided time.Time  // when it left decide allowed, for its queue span
	span    trace.Span // decide opens it first
	// ran: the scheduler started the call, queued after its batch was given to it.
	ran    bool
	queued time.Duration
	// queue: the call is one of several in its batch, and its completed line is queued
	// (see AsyncLedger); a call alone has no next call to dispatch meanwhile, and waits.
	queue bool
	// durable waits until the completed line is durable (see AsyncLedger); nil once waited.
	durable func() error
	// dataJSON is the JSON of the result's data as the output check encoded it, nil when
	// it was not checked.
	dataJSON []byte
	mu       sync.Mutex
}

// RunBatch runs a model's calls: each is decided in input order, then the allowed ones run
// through the scheduler, concurrently where their paths do not conflict. Results come back
// in input order.
func (p *Pipeline) RunBatch(ctx context.Context, calls []Call) []Result {
	out := make([]Result, len(calls))
	p.RunBatchFunc(ctx, calls, func(i int, r Result) { out[i] = r })
	return out
}

// RunBatchFunc runs a batch as [Pipeline.RunBatch] does, but hands each result to emit as
// soon as it may leave: when its call is over, its completed receipt line is durable, and
// every earlier call's result has been emitted. emit is called on the caller's goroutine, in
// input order, once per call; the pipeline keeps nothing of a call once emit returns, so a
// batch holds the calls not yet released rather than every result until its end.
func (p *Pipeline) RunBatchFunc(ctx context.Context, calls []Call, emit func(i int, r Result)) {
	prep := p.prepare(ctx, calls)
	flights := make([]*flight, len(calls))
	for i, c := range calls {
		flights[i] = p.decide(ctx, c, i, prep, len(calls) > 1)
	}
	b := newBatch(p, flights)
	b.start(ctx)
	b.release(emit)
}

// decide takes a call through registry, schema, policy, approval and pre-hooks. A call
// refused at any step leaves with its result and receipt written.
func (p *Pipeline) decide(ctx context.Context, c Call, index int, prep *prepared, queue bool) *flight {
	c.Arguments = normalizeArgs(c.Arguments)
	if c.ID == "" {
		c.ID = GenerateCallID(c, index)
	}
	f := &flight{call: c, rec: p.newReceipt(c), queue: queue}
	log := p.log.With("call_id", c.ID, "tool", c.Name)
	ctx = p.startCallSpan(ctx, f)

	if ctx.Err() != nil {
		p.cancel(f)
		return f
	}
	if v, bad := checkEnvelope(c); bad {
		p.deny(f, v, StatusFailed)
		return f
	}
	if p.opts.DenialBudget > 0 && p.session.Denials() >= p.opts.DenialBudget {
		p.deny(f, Verdict{Code: CodeDenialBudgetExhausted, DecidedBy: "session:denial_budget",
			Message: fmt.Sprintf("this session reached its limit of %d denied calls; no further calls are accepted", p.opts.DenialBudget)},
			StatusDenied)
		return f
	}
	t, ok := p.opts.Registry.Lookup(c.Name)
	if !ok {
		p.deny(f, Verdict{Code: CodeUnknownTool, DecidedBy: "registry", Retryable: true,
			Message: fmt.Sprintf("no tool named %q; available tools: %s", c.Name, strings.Join(p.opts.Registry.Names(), ", "))},
			StatusDenied)
		return f
	}
	f.tool = t
	if vs := t.ValidateInput(c.Arguments); len(vs) > 0 {
		p.deny(f, Verdict{Code: CodeInputValidation, DecidedBy: "schema:input", Retryable: true,
			Message: "invalid arguments: " + vs.Error()}, StatusFailed)
		return f
	}
	var refs []tool.PathRef
	if t.Paths != nil {
		var err error
		if refs, err = t.Paths(c.Arguments); err != nil {
			p.deny(f, Verdict{Code: CodeInvalidPath, DecidedBy: "tool:paths", Retryable: true, Message: err.Error()}, StatusDenied)
			return f
		}
	}
	f.req = &Request{Call: c, Tool: t, Args: c.Arguments, PathRefs: refs, Env: p.opts.Env, SessionID: p.opts.SessionID}
	p.judge(ctx, f, log, prep)
	return f
}

// judge takes a call the registry and its schema accepted through policy and approval. A
// refusal leaves the call with its result and receipt written; an allowed call leaves with
// its decision recorded, ready to be scheduled.
func (p *Pipeline) judge(ctx context.Context, f *flight, log hclog.Logger, prep *prepared) {
	pctx, ps := p.step(ctx, f, "policy")
	pctx = prep.with(pctx)
	v, err := recoverStep("policy", func() (Verdict, error) { return p.opts.Policy.Check(pctx, f.req) })
	ps.End()
	if err != nil && ctx.Err() != nil {
		p.cancel(f)
		return
	}
	if err != nil {
		log.Error("policy failed", "error", err)
		p.deny(f, Verdict{Code: CodePolicyError, DecidedBy: "policy", Message: "policy could not decide: " + err.Error()}, StatusDenied)
		return
	}
	f.rec.Paths = resolvedNames(v.Paths)
	if v.Decision != Allow {
		status := StatusDenied
		if v.Block {
			status = StatusBlocked
		}
		p.deny(f, v, status)
		return
	}
	if len(v.Paths) != len(f.req.PathRefs) {
		// A handler must never fall back to the model's own string.
		p.deny(f, Verdict{Code: CodePolicyError, DecidedBy: v.DecidedBy,
			Message: fmt.Sprintf("policy allowed the call but resolved %d of its %d paths", len(v.Paths), len(f.req.PathRefs))}, StatusDenied)
		return
	}
	f.req.Paths = v.Paths
	decidedBy := []string{v.DecidedBy}

	f.req.OnWait = func() {
		prep.drop()
		f.rec.Decision = string(Ask)
		f.rec.ReasonCode = "awaiting_approval"
		f.rec.Outcome = receipt.Interrupted
		p.appendLedger(receipt.EventPending, f.rec)
	}
	actx, as := p.step(ctx, f, "approval")
	a, err := recoverStep("approval", func() (Verdict, error) { return p.opts.Approval.Approve(actx, f.req) })
	as.End()
	f.req.OnWait = nil
	if err != nil && ctx.Err() != nil {
		p.cancel(f)
		return
	}
	if err != nil {
		log.Error("approval failed", "error", err)
		p.deny(f, Verdict{Code: CodePolicyError, DecidedBy: "approval", Message: "approval could not decide: " + err.Error()}, StatusDenied)
		return
	}
	if a.Decision != Allow {
		if a.Decision == Ask { // an approver must answer, not defer: nobody did
			a.Code, a.Message = CodeApprovalRequired, "this call needs a person's approval and none was given"
		}
		p.deny(f, a, StatusDenied)
		return
	}
	decidedBy = append(decidedBy, a.DecidedBy)
	now := time.Now().UTC()
	f.rec.Decision, f.rec.ReasonCode, f.rec.DecidedBy, f.rec.DecidedAt = string(Allow), a.Code, strings.Join(decidedBy, ", "), &now
	f.rec.Risk, f.req.Risk = a.Risk, a.Risk
	f.stamp()
}

// checkEnvelope refuses a call whose id or name cannot be carried safely: an id with control
// characters or invalid UTF-8, or no tool name at all. The refusal is the model's to fix.
func checkEnvelope(c Call) (Verdict, bool) {
	if i := badRune(c.ID); i >= 0 {
		return Verdict{Code: CodeInvalidCallID, DecidedBy: "pipeline:call", Retryable: true,
			Message: fmt.Sprintf("call_id: %q holds a control character or invalid UTF-8 at byte %d; use printable characters only", c.ID, i)}, true
	}
	if strings.TrimSpace(c.Name) == "" {
		return Verdict{Code: CodeMissingToolName, DecidedBy: "pipeline:call", Retryable: true,
			Message: "name: missing; every call names the tool to run (\"name\": \"terminal\", …)"}, true
	}
	return Verdict{}, false
}

// badRune returns the byte offset of the first control character, Unicode format character
// (bidi overrides among them) or invalid UTF-8 byte in s, or -1.
func badRune(s string) int {
	for i, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return i
		}
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return i
			}
		}
	}
	return -1
}

// preHooks runs the pre-hooks just before the handler, inside the call's scheduler slot, so
// that they see what earlier calls of the batch left behind. It reports whether the call may
// go on; a refusal is recorded on the flight (the caller completes it).
func (p *Pipeline) preHooks(ctx context.Context, f *flight, log hclog.Logger) bool {
	for _, h := range p.opts.PreHooks {
		hv, err := recoverStep("pre-hook "+h.Name(), func() (Verdict, error) {
			b, err := h.Before(ctx, f.req)
			if err != nil || b == nil {
				return Verdict{}, err
			}
			code := b.Code
			if code == "" {
				code = CodePreHookBlocked
			}
			return Verdict{Decision: Deny, Code: code, Message: b.Message, Retryable: b.Retryable}, nil
		})
		switch {
		case err != nil && ctx.Err() != nil:
			p.finish(f, StatusCancelled, CodeCancelled, "the batch was cancelled before this call started", receipt.NotExecuted)
			return false
		case err != nil:
			log.Error("pre-hook failed", "hook", h.Name(), "error", err)
			p.refuse(f, Verdict{Code: CodePolicyError, DecidedBy: "pre_hook:" + h.Name(), Message: "pre-hook failed: " + err.Error()}, StatusDenied)
			return false
		case hv.Decision == Deny:
			hv.DecidedBy = "pre_hook:" + h.Name()
			p.refuse(f, hv, StatusBlocked)
			return false
		}
	}
	return true
}

// scope tells the scheduler what a call touches.
func (p *Pipeline) scope(f *flight) concurrency.Scope {
	if f.result != nil {
		return concurrency.Scope{Skip: true}
	}
	s := concurrency.Scope{NeverParallel: p.never[f.tool.Name]}
	if p.scoped != nil && !p.scoped[f.tool.Name] {
		s.Exclusive = !f.tool.ParallelSafe
		return s
	}
	for _, rp := range f.req.Paths {
		acc := concurrency.Read
		if rp.Access == tool.Write {
			acc = concurrency.Write
		}
		s.Paths = append(s.Paths, concurrency.PathAccess{Path: rp.Resolved, Access: acc})
	}
	if sc, ok := p.opts.Approval.(Scoper); ok {
		s.Paths = append(s.Paths, sc.Scope(f.req)...)
	}
	if !f.tool.ParallelSafe && len(s.Paths) == 0 {
		s.Exclusive = true
	}
	return s
}

// Scoper lets an approval add to a call's scope: a terminal command judged read-only reads
// the workspace, anything else writes it.
type Scoper interface {
	Scope(req *Request) []concurrency.PathAccess
}

// ledgerStop stops a batch once a call's dispatched line could not be made durable: the
// ledger is full or failing, and every later call of the batch is refused without running.
type ledgerStop struct {
	mu  sync.Mutex
	err error
}

func (s *ledgerStop) set(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

func (s *ledgerStop) get() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// dispatch writes the call's dispatched line. No call runs without a durable record of it:
// when the line cannot be written the call is refused, and so is the rest of the batch.
func (p *Pipeline) dispatch(f *flight, stop *ledgerStop) bool {
	if err := stop.get(); err != nil {
		p.finish(f, StatusFailed, CodeLedgerError, "not run: the receipt ledger could not record an earlier call of this batch, so the batch stopped: "+err.Error(), receipt.NotExecuted)
		return false
	}
	f.rec.DispatchStarted = true
	f.rec.Outcome = receipt.Interrupted // until the handler says otherwise
	if err := p.appendLedgerErr(receipt.EventDispatched, f.rec); err != nil {
		f.rec.DispatchStarted = false
		stop.set(err)
		p.log.Error("ledger append failed; batch stopped", "call_id", f.call.ID, "event", receipt.EventDispatched, "error", err)
		p.finish(f, StatusFailed, CodeLedgerError, "not run: the receipt ledger could not record that this call was dispatched: "+err.Error(), receipt.NotExecuted)
		return false
	}
	return true
}

// execute runs an allowed call's handler and checks its output.
func (p *Pipeline) execute(ctx context.Context, f *flight, stop *ledgerStop) {
	defer p.complete(f)
	log := p.log.With("call_id", f.call.ID, "tool", f.call.Name)
	if ctx.Err() != nil {
		p.finish(f, StatusCancelled, CodeCancelled, "the batch was cancelled before this call started", receipt.NotExecuted)
		return
	}
	p.queued(ctx, f)
	if !p.preHooks(ctx, f, log) || !p.dispatch(f, stop) {
		return
	}
	timeout := f.tool.Timeout
	if timeout == 0 {
		timeout = p.opts.Env.Describe().Limits.DefaultTimeout
	}
	if f.tool.CallTimeout != nil {
		// The call's own timeout, so that the safety deadline below follows it.
		timeout = f.tool.CallTimeout(f.call.Arguments, timeout)
	}
	inv := &tool.Invocation{
		CallID: f.call.ID, SessionID: p.opts.SessionID, Args: f.call.Arguments,
		Paths: map[string]tool.ResolvedPath{}, Env: p.opts.Env, Timeout: timeout, Log: log,
	}
	for _, rp := range f.req.Paths {
		inv.Paths[rp.Arg] = rp
	}
	hctx, cancel := handlerContext(ctx, timeout)
	defer cancel()
	hctx, es := p.step(hctx, f, "execution")
	start := time.Now()
	f.started = start
	st := start.UTC()
	f.rec.HandlerStarted, f.rec.StartedAt = true, &st
	out, err := runHandler(backend.WithCall(hctx, f.call.ID), f.tool.Handler, inv)
	elapsed := time.Since(start)
	es.End()
	switch {
	case err != nil:
		log.Warn("handler failed", "error", err)
		f.result = nil
		r := p.finish(f, StatusFailed, CodeHandlerFailed, err.Error(), receipt.ExecutionFailed)
		r.Retryable = errors.Is(err, backend.ErrUnavailable)
		r.Metadata.DurationMS = elapsed.Milliseconds()
		return
	case out == nil:
		out = &tool.Output{}
	}
	p.takeOutput(f, out, elapsed, log)
}

// takeOutput checks a handler's output against the tool's output schema and makes it the
// call's result. The data's JSON, encoded for the check, is kept for the post-hooks.
func (p *Pipeline) takeOutput(f *flight, out *tool.Output, elapsed time.Duration, log hclog.Logger) {
	// A failure that carries no data has nothing to check against the output schema.
	if out.Status == tool.StatusOK || out.Data != nil {
		raw, vs := f.tool.CheckOutput(out.Data)
		if len(vs) > 0 {
			log.Error("output failed its schema", "error", vs.Error())
			r := p.finish(f, StatusFailed, CodeOutputValidation, "the tool's output broke its schema: "+vs.Error(), receipt.Executed)
			r.Metadata.DurationMS = elapsed.Milliseconds()
			r.Metadata.ExitCode = out.ExitCode
			return
		}
		f.dataJSON = raw
	}
	status, code, outcome := StatusOK, out.ErrorCode, receipt.Executed
	switch out.Status {
	case tool.StatusFailed:
		status = StatusFailed
	case tool.StatusTimeout:
		status, outcome = StatusTimeout, receipt.Timeout
		if code == "" {
			code = CodeTimeout
		}
	case tool.StatusInterrupted:
		status, outcome = StatusInterrupted, receipt.Interrupted
		if code == "" {
			code = CodeInterrupted
		}
	}
	r := p.finish(f, status, code, out.ErrorMessage, outcome)
	r.Retryable = out.Retryable
	content, cut := p.shape(f.tool, out)
	r.Content = content
	if f.tool.Output.Mode == tool.SummaryOnly {
		r.Output = out.Content
	}
	r.Data = out.Data
	r.Metadata.DurationMS = elapsed.Milliseconds()
	r.Metadata.OutputChars = utf8.RuneCountInString(out.Content)
	r.Metadata.Truncated = cut || out.Truncated
	r.Metadata.ExitCode = out.ExitCode
	r.Metadata.Notes = out.Notes
	f.rec.ExitCode = out.ExitCode
}

// handlerContext gives the handler the call's context with a safety deadline well past the
// tool's own timeout: handlers enforce their timeout themselves (so that a timeout is
// reported as one and kills the process tree); this only stops a handler that ignores it.
func handlerContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, timeout+30*time.Second)
}

// runHandler calls h, turning a panic into an error.
func runHandler(ctx context.Context, h tool.Handler, inv *tool.Invocation) (out *tool.Output, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v", r)
			inv.Log.Error("handler panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	return h(ctx, inv)
}

// recoverStep runs a policy, approval or hook step, turning a panic into an error so that it
// fails closed.
func recoverStep(step string, fn func() (Verdict, error)) (v Verdict, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = Verdict{}, fmt.Errorf("%s panicked: %v", step, r)
		}
	}()
	return fn()
}

// deny ends a call that will not run and writes its receipt.
func (p *Pipeline) deny(f *flight, v Verdict, status Status) {
	p.refuse(f, v, status)
	p.complete(f)
}

// refuse records why a call will not run. Only policy and approval denials count against the
// session's denial budget: a schema mistake, an unknown tool, a policy that could not decide
// or a hook's block (a stale file) is not probing.
func (p *Pipeline) refuse(f *flight, v Verdict, status Status) {
	now := time.Now().UTC()
	f.rec.Decision = string(Deny)
	f.rec.ReasonCode = v.Code
	f.rec.DecidedBy = v.DecidedBy
	f.rec.DecidedAt = &now
	switch {
	case status != StatusDenied:
	case v.Code == CodeDenialBudgetExhausted, v.Code == CodeUnknownTool, v.Code == CodePolicyError, v.Code == CodeApprovalPending:
	default:
		p.session.AddDenial()
	}
	msg := v.Message
	if msg == "" {
		msg = fmt.Sprintf("refused by %s (%s)", v.DecidedBy, v.Code)
	}
	r := p.finish(f, status, v.Code, msg, receipt.NotExecuted)
	r.Retryable = v.Retryable
	r.ApprovalID = v.ApprovalID
	if len(v.Paths) > 0 {
		f.rec.Paths = resolvedNames(v.Paths)
	}
}

// cancel ends a call whose batch was cancelled before it started.
func (p *Pipeline) cancel(f *flight) {
	p.finish(f, StatusCancelled, CodeCancelled, "the batch was cancelled before this call started", receipt.NotExecuted)
	p.complete(f)
}

// finish sets the call's result and writes its completed receipt. It returns the result so
// callers can add to it; the receipt pointer is shared, so later changes to f.rec show in
// the result but not in the ledger line already written — callers set the receipt first.
func (p *Pipeline) finish(f *flight, status Status, code, msg string, outcome receipt.Outcome) *Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now().UTC()
	f.rec.Outcome = outcome
	f.rec.Status = string(status)
	f.rec.ErrorCode = code
	f.rec.FinishedAt = &now
	if f.rec.Decision == "" {
		f.rec.Decision = string(Deny)
	}
	content := msg
	if content == "" && status != StatusOK {
		content = string(status)
	}
	r := &Result{
		CallID: f.call.ID, ToolName: f.call.Name, Status: status, ErrorCode: code,
		ErrorMessage: msg, Content: content, Receipt: f.rec,
		Metadata: Metadata{Backend: p.backend},
	}
	if status == StatusOK {
		r.ErrorMessage, r.Content = "", ""
	}
	if !f.started.IsZero() {
		r.Metadata.StartedAt = f.started.UTC().Format(time.RFC3339Nano)
		r.Metadata.EndedAt = now.Format(time.RFC3339Nano)
	}
	f.result = r
	return r
}

// complete writes the final receipt line once the result is settled, then lets the
// post-hooks look at it. A post-hook cannot change the result: it gets a deep copy, and its
// panics are logged and dropped. With an AsyncLedger the line is only queued here, and the
// post-hooks (which keep session state: hashes read, a plan's step) may run before it is
// durable; the batch waits for it (settle) before the result leaves.
func (p *Pipeline) complete(f *flight) {
	if al, ok := p.opts.Ledger.(AsyncLedger); ok && f.queue {
		cp := *f.rec
		f.durable = al.AppendAsync(receipt.EventCompleted, &cp)
	} else if err := p.appendLedgerErr(receipt.EventCompleted, f.rec); err != nil {
		p.completedFailed(f, err)
	}
	p.endCallSpan(f)
	p.postHooks(f)
	// The flight lives until its result leaves its batch, in order: a large batch keeps
	// many, and their data's JSON is needed no more.
	f.dataJSON = nil
}

// postHooks lets each post-hook that observes the call look at a deep copy of its result.
func (p *Pipeline) postHooks(f *flight) {
	var data []byte
	for _, h := range p.opts.PostHooks {
		if o, ok := h.(Observer); ok && !o.Observes(f.call.Name) {
			continue
		}
		if data == nil {
			var err error
			if data, err = p.resultJSON(f); err != nil {
				p.log.Error("post-hooks skipped: result not encodable", "call_id", f.call.ID, "error", err)
				return
			}
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					p.log.Error("post-hook panicked", "hook", h.Name(), "call_id", f.call.ID, "panic", fmt.Sprint(r))
				}
			}()
			h.After(context.Background(), f.req, f.result.clone(data))
		}()
	}
}

// resultJSON is the JSON of the result's data: the output check's encoding when the data
// is still what was checked.
func (p *Pipeline) resultJSON(f *flight) ([]byte, error) {
	if f.dataJSON != nil && f.result.Status == StatusOK {
		return f.dataJSON, nil
	}
	return json.Marshal(f.result.Data)
}

// clone returns a deep copy of r for a post-hook, with data, the JSON of r.Data, decoded
// afresh as its Data: the hook sees the result as a client decoding it would (an object
// as a map), and nothing it holds is shared with r.
func (r *Result) clone(data []byte) Result {
	c := *r
	c.Data = nil
	_ = json.Unmarshal(data, &c.Data)
	if e := r.Metadata.ExitCode; e != nil {
		c.Metadata.ExitCode = new(*e)
	}
	if q := r.Metadata.QueuedMS; q != nil {
		c.Metadata.QueuedMS = new(*q)
	}
	c.Metadata.Notes = slices.Clone(r.Metadata.Notes)
	c.Receipt = r.Receipt.Clone()
	return c
}

// settle waits until the call's completed line is durable, and says in the result's notes
// when it could not be written.
func (p *Pipeline) settle(f *flight) {
	if f.durable == nil {
		return
	}
	err := f.durable()
	f.durable = nil
	if err != nil {
		p.completedFailed(f, err)
	}
}

func (p *Pipeline) completedFailed(f *flight, err error) {
	p.log.Error("ledger append failed", "call_id", f.call.ID, "event", receipt.EventCompleted, "error", err)
	f.result.Metadata.Notes = append(f.result.Metadata.Notes, "the receipt could not be written to the ledger: "+err.Error())
}

func (p *Pipeline) appendLedger(event string, r *receipt.Receipt) {
	if err := p.appendLedgerErr(event, r); err != nil {
		p.log.Error("ledger append failed", "call_id", r.CallID, "event", event, "error", err)
	}
}

func (p *Pipeline) appendLedgerErr(event string, r *receipt.Receipt) error {
	if p.opts.Ledger == nil {
		return nil
	}
	cp := *r
	return p.opts.Ledger.Append(event, &cp)
}

// shape applies the tool's output policy to what the model reads.
func (p *Pipeline) shape(t *tool.Tool, out *tool.Output) (string, bool) {
	switch t.Output.Mode {
	case tool.Full:
		return out.Content, false
	case tool.SummaryOnly:
		return Summary(out), out.Content != ""
	}
	limit := t.Output.MaxChars
	if limit <= 0 {
		limit = p.opts.MaxOutputChars
	}
	return HeadTail(out.Content, limit)
}

// HeadTail keeps the first and last limit/2 characters of s with a marker between them.
func HeadTail(s string, limit int) (string, bool) {
	n := utf8.RuneCountInString(s)
	if limit <= 0 || n <= limit {
		return s, false
	}
	runes := []rune(s)
	head, tail := limit-limit/2, limit/2
	return string(runes[:head]) +
		fmt.Sprintf("\n[... airlock: %d characters truncated ...]\n", n-head-tail) +
		string(runes[n-tail:]), true
}

func (p *Pipeline) newReceipt(c Call) *receipt.Receipt {
	r := &receipt.Receipt{
		CallID: c.ID, ToolName: c.Name, SessionID: p.opts.SessionID, Client: c.Client,
		ArgumentsSHA256: receipt.HashArguments(c.Arguments),
		ReceivedAt:      time.Now().UTC(), Backend: p.backend,
	}
	if p.opts.StoreArguments {
		r.Arguments = receipt.Canonical(c.Arguments)
		if !json.Valid(r.Arguments) {
			// Kept as a JSON string: a model's broken arguments must not break the receipt.
			r.Arguments, _ = json.Marshal(string(c.Arguments))
		}
	}
	return r
}

// normalizeArgs turns absent arguments into an empty object and a JSON string holding an
// object (the OpenAI wire form) into the object.
func normalizeArgs(a json.RawMessage) json.RawMessage {
	s := strings.TrimSpace(string(a))
	if s == "" || s == "null" {
		return json.RawMessage("{}")
	}
	if strings.HasPrefix(s, `"`) {
		var inner string
		if err := json.Unmarshal(a, &inner); err == nil {
			if strings.TrimSpace(inner) == "" {
				return json.RawMessage("{}")
			}
			return json.RawMessage(inner)
		}
	}
	return a
}

// GenerateCallID derives a stable ID for a call that came without one: the same call at the
// same position in a batch always gets the same ID.
func GenerateCallID(c Call, index int) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%s\x00", index, c.Name)
	h.Write(receipt.Canonical(c.Arguments))
	return "call_" + hex.EncodeToString(h.Sum(nil))[:16]
}

func resolvedNames(ps []tool.ResolvedPath) []string {
	var out []string
	for _, p := range ps {
		if p.Resolved != "" {
			out = append(out, p.Resolved)
		} else {
			out = append(out, p.Raw)
		}
	}
	return out
}
