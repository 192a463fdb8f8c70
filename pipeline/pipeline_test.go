package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/receipt"
	"github.com/airlock-dev/airlock/terminal"
	"github.com/airlock-dev/airlock/tool"
)

// fixture is a pipeline on a local workspace with a "touch" tool whose handler creates a
// file: if a refused call ever reached it, the file would exist.
type fixture struct {
	ws      string
	ledger  string
	calls   atomic.Int32
	options pipeline.Options
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{ws: filepath.Join(dir, "ws"), ledger: filepath.Join(dir, "ledger.jsonl")}
	if err := os.Mkdir(f.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	env, err := local.New(local.Config{Workspace: f.ws, DefaultTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Close(context.Background()) })
	l, err := receipt.Open(f.ledger)
	t.Cleanup(func() { _ = l.Close() })
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	must(t, reg.Register(terminal.Definition(terminal.Options{})))
	must(t, reg.Register(f.touchTool()))
	must(t, reg.Register(tool.Definition{
		Name: "liar", Risk: tool.RiskRead, ParallelSafe: true,
		InputSchema:  json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`),
		Handler: func(context.Context, *tool.Invocation) (*tool.Output, error) {
			return &tool.Output{Content: "x", Data: map[string]any{"n": "not a number"}}, nil
		},
	}))
	must(t, reg.Register(tool.Definition{
		Name: "broken", Risk: tool.RiskRead, InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(context.Context, *tool.Invocation) (*tool.Output, error) { return nil, errors.New("disk on fire") },
	}))
	must(t, reg.Register(tool.Definition{
		Name: "panics", Risk: tool.RiskRead, InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler: func(context.Context, *tool.Invocation) (*tool.Output, error) { panic("boom") },
	}))
	f.options = pipeline.Options{Registry: reg, Env: env, Ledger: l, Policy: allowAll{}, Approval: allowAll{}}
	return f
}

func (f *fixture) touchTool() tool.Definition {
	return tool.Definition{
		Name: "touch", Risk: tool.RiskWrite, ParallelSafe: true,
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["name"],"properties":{"name":{"type":"string"}}}`),
		Paths: func(raw json.RawMessage) ([]tool.PathRef, error) {
			var a struct{ Name string }
			_ = json.Unmarshal(raw, &a)
			return []tool.PathRef{{Arg: "name", Path: a.Name, Access: tool.Write}}, nil
		},
		Handler: func(_ context.Context, inv *tool.Invocation) (*tool.Output, error) {
			f.calls.Add(1)
			return &tool.Output{Content: "touched"}, os.WriteFile(inv.Paths["name"].Resolved, []byte("x"), 0o644)
		},
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) run(t *testing.T, opts func(*pipeline.Options), calls ...pipeline.Call) []pipeline.Result {
	t.Helper()
	o := f.options
	if opts != nil {
		opts(&o)
	}
	p, err := pipeline.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p.RunBatch(context.Background(), calls)
}

type policyFunc func(context.Context, *pipeline.Request) (pipeline.Verdict, error)

func (fn policyFunc) Check(ctx context.Context, r *pipeline.Request) (pipeline.Verdict, error) {
	return fn(ctx, r)
}

type approvalFunc func(context.Context, *pipeline.Request) (pipeline.Verdict, error)

func (fn approvalFunc) Approve(ctx context.Context, r *pipeline.Request) (pipeline.Verdict, error) {
	return fn(ctx, r)
}

type preHook struct {
	block bool
	err   error
	panic bool
}

func (h preHook) Name() string { return "test" }
func (h preHook) Before(context.Context, *pipeline.Request) (*pipeline.Block, error) {
	if h.panic {
		panic("hook panic")
	}
	if h.block {
		return &pipeline.Block{Message: "blocked by test hook"}, h.err
	}
	return nil, h.err
}

type postHook struct{ seen *[]pipeline.Result }

func (h postHook) Name() string { return "observer" }
func (h postHook) After(_ context.Context, _ *pipeline.Request, r pipeline.Result) {
	r.Status = "tampered" // a copy: must not show in the real result
	*h.seen = append(*h.seen, r)
}

func touch(name string) pipeline.Call {
	return pipeline.Call{ID: "c-" + name, Name: "touch", Arguments: json.RawMessage(`{"name":"` + name + `"}`)}
}

// TestStatuses covers every status and error code the pipeline itself gives, and checks for
// each refused call that its handler never ran: the file it would create does not exist.
func TestStatuses(t *testing.T) {
	t.Parallel()
	deny := policyFunc(func(context.Context, *pipeline.Request) (pipeline.Verdict, error) {
		return pipeline.Verdict{Decision: pipeline.Deny, Code: "outside_roots", DecidedBy: "policy:test", Message: "no"}, nil
	})
	tests := []struct {
		name       string
		opts       func(*pipeline.Options)
		call       pipeline.Call
		status     pipeline.Status
		code       string
		outcome    receipt.Outcome
		handlerRan bool
	}{
		{"allowed", nil, touch("ok"), pipeline.StatusOK, "", receipt.Executed, true},
		{"unknown tool", nil, pipeline.Call{ID: "u", Name: "rm_everything"}, pipeline.StatusDenied, "unknown_tool", receipt.NotExecuted, false},
		{"no tool name", nil, pipeline.Call{ID: "n", Arguments: json.RawMessage(`{"name":"x"}`)}, pipeline.StatusFailed, "missing_tool_name", receipt.NotExecuted, false},
		{"call id with a newline and an escape", nil, pipeline.Call{ID: "c-forged\n7\x1b[2K", Name: "touch", Arguments: json.RawMessage(`{"name":"forged"}`)},
			pipeline.StatusFailed, "invalid_call_id", receipt.NotExecuted, false},
		{"call id with a bidi override", nil, pipeline.Call{ID: "c-\u202egnp.exe", Name: "touch", Arguments: json.RawMessage(`{"name":"bidi"}`)},
			pipeline.StatusFailed, "invalid_call_id", receipt.NotExecuted, false},
		{"call id of invalid UTF-8", nil, pipeline.Call{ID: "c-\xff", Name: "touch", Arguments: json.RawMessage(`{"name":"utf"}`)},
			pipeline.StatusFailed, "invalid_call_id", receipt.NotExecuted, false},
		{"call id of any printable text", nil, pipeline.Call{ID: "c-日本語 \uFFFD ok", Name: "touch", Arguments: json.RawMessage(`{"name":"print"}`)},
			pipeline.StatusOK, "", receipt.Executed, true},
		{"bad arguments", nil, pipeline.Call{ID: "b", Name: "touch", Arguments: json.RawMessage(`{"nme":"x"}`)},
			pipeline.StatusFailed, "input_validation_failed", receipt.NotExecuted, false},
		{"policy denies", func(o *pipeline.Options) { o.Policy = deny }, touch("denied"), pipeline.StatusDenied, "outside_roots", receipt.NotExecuted, false},
		{"policy errors", func(o *pipeline.Options) {
			o.Policy = policyFunc(func(context.Context, *pipeline.Request) (pipeline.Verdict, error) {
				return pipeline.Verdict{Decision: pipeline.Allow}, errors.New("cannot stat")
			})
		}, touch("perr"), pipeline.StatusDenied, "policy_error", receipt.NotExecuted, false},
		{"policy allows without resolving", func(o *pipeline.Options) {
			o.Policy = policyFunc(func(context.Context, *pipeline.Request) (pipeline.Verdict, error) {
				return pipeline.Verdict{Decision: pipeline.Allow, DecidedBy: "policy:lazy"}, nil
			})
		}, touch("lazy"), pipeline.StatusDenied, "policy_error", receipt.NotExecuted, false},
		{"policy panics", func(o *pipeline.Options) {
			o.Policy = policyFunc(func(context.Context, *pipeline.Request) (pipeline.Verdict, error) { panic("x") })
		}, touch("ppanic"), pipeline.StatusDenied, "policy_error", receipt.NotExecuted, false},
		{"approval denies", func(o *pipeline.Options) {
			o.Approval = approvalFunc(func(context.Context, *pipeline.Request) (pipeline.Verdict, error) {
				return pipeline.Verdict{Decision: pipeline.Deny, Code: "approval_required", DecidedBy: "mode:manual"}, nil
			})
		}, touch("adeny"), pipeline.StatusDenied, "approval_required", receipt.NotExecuted, false},
		{"approval left asking", func(o *pipeline.Options) {
			o.Approval = approvalFunc(func(context.Context, *pipeline.Request) (pipeline.Verdict, error) {
				return pipeline.Verdict{Decision: pipeline.Ask}, nil
			})
		}, touch("aask"), pipeline.StatusDenied, "approval_required", receipt.NotExecuted, false},
		{"approval panics", func(o *pipeline.Options) {
			o.Approval = approvalFunc(func(context.Context, *pipeline.Request) (pipeline.Verdict, error) { panic("x") })
		}, touch("apanic"), pipeline.StatusDenied, "policy_error", receipt.NotExecuted, false},
		{"pre-hook blocks", func(o *pipeline.Options) { o.PreHooks = []pipeline.PreHook{preHook{block: true}} },
			touch("hblock"), pipeline.StatusBlocked, "pre_hook_blocked", receipt.NotExecuted, false},
		{"pre-hook errors", func(o *pipeline.Options) { o.PreHooks = []pipeline.PreHook{preHook{err: errors.New("x")}} },
			touch("herr"), pipeline.StatusDenied, "policy_error", receipt.NotExecuted, false},
		{"pre-hook panics", func(o *pipeline.Options) { o.PreHooks = []pipeline.PreHook{preHook{panic: true}} },
			touch("hpanic"), pipeline.StatusDenied, "policy_error", receipt.NotExecuted, false},
		{"handler fails", nil, pipeline.Call{ID: "h", Name: "broken"}, pipeline.StatusFailed, "handler_failed", receipt.ExecutionFailed, false},
		{"handler panics", nil, pipeline.Call{ID: "hp", Name: "panics"}, pipeline.StatusFailed, "handler_failed", receipt.ExecutionFailed, false},
		{"output breaks schema", nil, pipeline.Call{ID: "o", Name: "liar"}, pipeline.StatusFailed, "output_validation_failed", receipt.Executed, false},
		{"timeout", nil, pipeline.Call{ID: "t", Name: "terminal", Arguments: json.RawMessage(`{"command":"sleep 5","timeout":0.3}`)},
			pipeline.StatusTimeout, "timeout", receipt.Timeout, false},
		{"non-zero exit is ok", nil, pipeline.Call{ID: "e", Name: "terminal", Arguments: json.RawMessage(`{"command":"exit 3"}`)},
			pipeline.StatusOK, "", receipt.Executed, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			res := f.run(t, tc.opts, tc.call)[0]
			if res.Status != tc.status || res.ErrorCode != tc.code {
				t.Fatalf("status=%s code=%s msg=%q, want %s/%s", res.Status, res.ErrorCode, res.ErrorMessage, tc.status, tc.code)
			}
			rc := res.Receipt
			if rc.Outcome != tc.outcome {
				t.Errorf("outcome = %s, want %s", rc.Outcome, tc.outcome)
			}
			refused := tc.outcome == receipt.NotExecuted
			if refused && f.calls.Load() != 0 {
				t.Errorf("a refused call reached its handler")
			}
			if refused && (rc.HandlerStarted || rc.DispatchStarted || rc.Decision != "deny") {
				t.Errorf("refused call's receipt: %+v", rc)
			}
			if !refused && (!rc.HandlerStarted || !rc.DispatchStarted || rc.Decision != "allow") {
				t.Errorf("run call's receipt: %+v", rc)
			}
			var a struct{ Name string }
			_ = json.Unmarshal(tc.call.Arguments, &a)
			if tc.call.Name == "touch" && a.Name != "" {
				_, err := os.Stat(filepath.Join(f.ws, a.Name))
				if ran := err == nil; ran != tc.handlerRan || int(f.calls.Load()) != map[bool]int{true: 1}[tc.handlerRan] {
					t.Errorf("handler ran = %v (calls %d), want %v", ran, f.calls.Load(), tc.handlerRan)
				}
			}
			if res.Status != pipeline.StatusOK && res.ErrorMessage == "" {
				t.Errorf("no error message for %s", res.Status)
			}
			lines := ledgerLines(t, f.ledger)
			last := lines[len(lines)-1]
			if last.Event != receipt.EventCompleted || last.Receipt.Outcome != tc.outcome || last.Receipt.CallID != strings.ToValidUTF8(tc.call.ID, "\uFFFD") {
				t.Errorf("last ledger line = %s %+v", last.Event, last.Receipt)
			}
			if !refused && (len(lines) < 2 || lines[len(lines)-2].Event != receipt.EventDispatched) {
				t.Errorf("no dispatched event before the handler ran")
			}
		})
	}
}

func ledgerLines(t *testing.T, path string) []receipt.Line {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	lines, err := receipt.ReadAll(fh)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := receipt.VerifyFile(path); err != nil || n != len(lines) {
		t.Fatalf("ledger verify: %d lines, %v", n, err)
	}
	return lines
}

func TestPostHookObservesOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var seen []pipeline.Result
	res := f.run(t, func(o *pipeline.Options) { o.PostHooks = []pipeline.PostHook{postHook{&seen}} }, touch("a"), pipeline.Call{ID: "x", Name: "nope"})
	if len(seen) != 2 || res[0].Status != pipeline.StatusOK || res[1].Status != pipeline.StatusDenied {
		t.Fatalf("seen %d results; statuses %s %s", len(seen), res[0].Status, res[1].Status)
	}
}

// lockedHook records the results it sees; calls of one batch end, and their post-hooks run,
// at the same time.
type lockedHook struct {
	mu   *sync.Mutex
	seen *[]pipeline.Result
}

func (h lockedHook) Name() string { return "recorder" }
func (h lockedHook) After(_ context.Context, _ *pipeline.Request, r pipeline.Result) {
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.seen = append(*h.seen, r)
}

// touchOnly is a post-hook that observes only touch calls.
type touchOnly struct{ lockedHook }

func (touchOnly) Observes(tool string) bool { return tool == "touch" }

// TestPostHookObservesItsTools: a post-hook that says which tools it observes (Observer) is
// called for those calls only, with the result's data decoded afresh; one that does not say
// sees every call.
func TestPostHookObservesItsTools(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var some, all []pipeline.Result
	var mu sync.Mutex
	res := f.run(t, func(o *pipeline.Options) {
		o.PostHooks = []pipeline.PostHook{touchOnly{lockedHook{&mu, &some}}, lockedHook{&mu, &all}}
	}, pipeline.Call{ID: "t", Name: "terminal", Arguments: json.RawMessage(`{"command":"exit 3"}`)}, touch("a"))
	if len(all) != 2 || len(some) != 1 || some[0].CallID != "c-a" {
		t.Fatalf("observer of touch saw %d results, the other %d; want 1 (c-a) and 2", len(some), len(all))
	}
	for _, r := range all {
		if r.CallID != "t" {
			continue
		}
		if d, ok := r.Data.(map[string]any); !ok || d["exit_code"] != float64(3) || res[0].Status != pipeline.StatusOK {
			t.Errorf("a post-hook saw data %#v (%T), want the result's decoded as a client would", r.Data, r.Data)
		}
	}
}

func TestDenialBudget(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	deny := policyFunc(func(context.Context, *pipeline.Request) (pipeline.Verdict, error) {
		return pipeline.Verdict{Decision: pipeline.Deny, Code: "forbidden_path", DecidedBy: "policy:test"}, nil
	})
	calls := []pipeline.Call{touch("1"), touch("2"), touch("3"), touch("4")}
	res := f.run(t, func(o *pipeline.Options) { o.Policy = deny; o.DenialBudget = 2 }, calls...)
	codes := []string{res[0].ErrorCode, res[1].ErrorCode, res[2].ErrorCode, res[3].ErrorCode}
	want := []string{"forbidden_path", "forbidden_path", "denial_budget_exhausted", "denial_budget_exhausted"}
	if strings.Join(codes, ",") != strings.Join(want, ",") {
		t.Errorf("codes = %v, want %v", codes, want)
	}
}

func TestArgumentsHashedNotStored(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := pipeline.Call{ID: "s", Name: "terminal", Arguments: json.RawMessage(`{"command": "echo secret-value"}`)}
	res := f.run(t, nil, c)[0]
	if res.Receipt.Arguments != nil || res.Receipt.ArgumentsSHA256 != receipt.HashArguments(json.RawMessage(`{"command":"echo secret-value"}`)) {
		t.Errorf("receipt arguments = %s / %s", res.Receipt.Arguments, res.Receipt.ArgumentsSHA256)
	}
	data, _ := os.ReadFile(f.ledger)
	if strings.Contains(string(data), "secret-value") {
		t.Error("raw arguments reached the ledger")
	}
	res = f.run(t, func(o *pipeline.Options) { o.StoreArguments = true }, c)[0]
	if string(res.Receipt.Arguments) != `{"command":"echo secret-value"}` {
		t.Errorf("stored arguments = %s", res.Receipt.Arguments)
	}
}

func TestOpenAIStringArgumentsAndGeneratedIDs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := pipeline.Call{Name: "terminal", Arguments: json.RawMessage(`"{\"command\":\"echo hi\"}"`)}
	a := f.run(t, nil, c)[0]
	b := f.run(t, nil, c)[0]
	if a.Status != pipeline.StatusOK || strings.TrimSpace(a.Content) != "hi" {
		t.Fatalf("result %+v", a)
	}
	if a.CallID == "" || a.CallID != b.CallID {
		t.Errorf("generated IDs %q %q are not stable", a.CallID, b.CallID)
	}
}

func TestOutputShaping(t *testing.T) {
	t.Parallel()
	got, cut := pipeline.HeadTail(strings.Repeat("a", 50)+strings.Repeat("b", 50), 10)
	if !cut || !strings.HasPrefix(got, "aaaaa\n[... airlock: 90 characters truncated ...]\nbbbbb") {
		t.Errorf("HeadTail = %q", got)
	}
	f := newFixture(t)
	res := f.run(t, func(o *pipeline.Options) { o.MaxOutputChars = 300 },
		pipeline.Call{ID: "big", Name: "terminal", Arguments: json.RawMessage(`{"command":"seq 1 10000"}`)})[0]
	if !res.Metadata.Truncated || !strings.HasPrefix(res.Content, "1\n2\n") || !strings.HasSuffix(res.Content, "10000\n") ||
		!strings.Contains(res.Content, "characters truncated") || res.Metadata.OutputChars <= 300 {
		t.Errorf("shaped content: truncated=%v chars=%d %q", res.Metadata.Truncated, res.Metadata.OutputChars, res.Content)
	}
}

func TestCancelledBatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	p, err := pipeline.New(f.options)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := p.RunBatch(ctx, []pipeline.Call{touch("late")})
	if res[0].Status != pipeline.StatusCancelled || res[0].Receipt.HandlerStarted || f.calls.Load() != 0 {
		t.Errorf("cancelled batch: %+v", res[0])
	}
}

// TestWaitingForAPersonIsRecorded: an approval that waits writes a pending line, outcome
// interrupted, before the call is decided and dispatched.
func TestWaitingForAPersonIsRecorded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	waiting := approvalFunc(func(_ context.Context, r *pipeline.Request) (pipeline.Verdict, error) {
		r.OnWait()
		return pipeline.Verdict{Decision: pipeline.Allow, Code: "approved_by_person", DecidedBy: "person:test"}, nil
	})
	res := f.run(t, func(o *pipeline.Options) { o.Approval = waiting }, touch("w"))[0]
	if res.Status != pipeline.StatusOK || res.Receipt.DecidedBy != "policy:default, person:test" {
		t.Fatalf("result %s, decided by %q", res.Status, res.Receipt.DecidedBy)
	}
	lines := ledgerLines(t, f.ledger)
	var events []string
	for _, ln := range lines {
		events = append(events, ln.Event)
	}
	if strings.Join(events, ",") != "pending,dispatched,completed" {
		t.Fatalf("events %v", events)
	}
	if p := lines[0].Receipt; p.Decision != "ask" || p.Outcome != receipt.Interrupted || p.HandlerStarted {
		t.Errorf("pending line: %+v", p)
	}
}

type mutatingHook struct{}

func (mutatingHook) Name() string { return "mutator" }
func (mutatingHook) After(_ context.Context, _ *pipeline.Request, r pipeline.Result) {
	if r.Metadata.ExitCode != nil {
		*r.Metadata.ExitCode = 99
	}
	if m, ok := r.Data.(map[string]any); ok {
		m["exit_code"] = 99
	}
	if r.Receipt.StartedAt != nil {
		*r.Receipt.StartedAt = r.Receipt.StartedAt.AddDate(-10, 0, 0)
	}
}

func TestPostHookCannotChangeResult(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res := f.run(t, func(o *pipeline.Options) { o.PostHooks = []pipeline.PostHook{mutatingHook{}} },
		pipeline.Call{ID: "t", Name: "terminal", Arguments: json.RawMessage(`{"command":"exit 3"}`)})[0]
	if *res.Metadata.ExitCode != 3 || res.Data.(map[string]any)["exit_code"] != 3 || res.Receipt.StartedAt.Year() < 2000 {
		t.Errorf("post-hook changed the result: exit %d, data %v, started %v", *res.Metadata.ExitCode, res.Data, res.Receipt.StartedAt)
	}
}

func TestBrokenArgumentsStillReceipted(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	res := f.run(t, func(o *pipeline.Options) { o.StoreArguments = true },
		pipeline.Call{ID: "bad", Name: "terminal", Arguments: json.RawMessage(`"{\"command\": \"ls\""`)},
		pipeline.Call{ID: "empty", Name: "terminal", Arguments: json.RawMessage(`""`)})
	if _, err := json.Marshal(res); err != nil {
		t.Fatalf("results not encodable: %v", err)
	}
	if res[0].ErrorCode != "input_validation_failed" || res[1].ErrorCode != "input_validation_failed" ||
		!strings.Contains(res[1].ErrorMessage, "arguments.command: missing property") {
		t.Errorf("results: %s %s / %s %s", res[0].ErrorCode, res[0].ErrorMessage, res[1].ErrorCode, res[1].ErrorMessage)
	}
	if lines := ledgerLines(t, f.ledger); len(lines) != 2 {
		t.Errorf("%d ledger lines, want a receipt for each call", len(lines))
	}
}

// TestCancelWhileDecidingIsNoDenial: a batch cancelled while its calls are being decided
// ends them as cancelled, not as policy errors, and spends no denial budget.
func TestCancelWhileDecidingIsNoDenial(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	sess := pipeline.NewMemorySession()
	o := f.options
	o.Session = sess
	o.Policy = policyFunc(func(ctx context.Context, r *pipeline.Request) (pipeline.Verdict, error) {
		if n++; n == 2 {
			cancel()
		}
		if err := ctx.Err(); err != nil {
			return pipeline.Verdict{}, err
		}
		return allowAll{}.Check(ctx, r)
	})
	p, err := pipeline.New(o)
	must(t, err)
	res := p.RunBatch(ctx, []pipeline.Call{touch("a"), touch("b"), touch("c"), touch("d")})
	for _, r := range res {
		if r.Status != pipeline.StatusCancelled || r.Receipt.HandlerStarted {
			t.Errorf("%s: %s/%s", r.CallID, r.Status, r.ErrorCode)
		}
	}
	if sess.Denials() != 0 || f.calls.Load() != 0 {
		t.Errorf("denials %d, handler calls %d", sess.Denials(), f.calls.Load())
	}
}

func TestNewFailsClosed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, tc := range []struct {
		name string
		edit func(*pipeline.Options)
		want string
	}{
		{"no policy", func(o *pipeline.Options) { o.Policy = nil }, "path policy is required"},
		{"no approval", func(o *pipeline.Options) { o.Approval = nil }, "approval step is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := f.options
			tc.edit(&o)
			if p, err := pipeline.New(o); err == nil || p != nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, %v; want an error saying %q", p, err, tc.want)
			}
		})
	}
}

// TestCallTimeoutSetsTheDeadline: a call's own timeout above the environment's default is
// what the handler gets, and the pipeline's safety deadline lies past it — `timeout: 60`
// under a default of 20 was cut at 50 s. The real terminal tool's calls go the same way.
func TestCallTimeoutSetsTheDeadline(t *testing.T) {
	t.Parallel()
	f := newFixture(t) // default timeout 10 s
	type seen struct {
		timeout time.Duration
		left    time.Duration
	}
	got := make(chan seen, 1)
	reg := f.options.Registry
	must(t, reg.Register(tool.Definition{
		Name: "slow", Risk: tool.RiskRead, InputSchema: json.RawMessage(`{"type":"object"}`),
		CallTimeout: func(json.RawMessage, time.Duration) time.Duration { return 5 * time.Minute },
		Handler: func(ctx context.Context, inv *tool.Invocation) (*tool.Output, error) {
			d, _ := ctx.Deadline()
			got <- seen{inv.Timeout, time.Until(d)}
			return &tool.Output{}, nil
		},
	}))
	f.run(t, nil, pipeline.Call{ID: "s", Name: "slow"})
	s := <-got
	if s.timeout != 5*time.Minute || s.left < 5*time.Minute {
		t.Errorf("handler got timeout %s with %s to its deadline, want 5m and more", s.timeout, s.left)
	}
	def := terminal.Definition(terminal.Options{})
	for _, tc := range []struct {
		args string
		want time.Duration
	}{
		{`{"command":"x"}`, 10 * time.Second},
		{`{"command":"x","timeout":60}`, time.Minute},
		{`{"command":"x","timeout":0.5}`, 500 * time.Millisecond},
		{`{"command":"x","timeout":86400}`, time.Hour}, // the tool's cap
	} {
		if got := def.CallTimeout(json.RawMessage(tc.args), 10*time.Second); got != tc.want {
			t.Errorf("terminal CallTimeout(%s) = %s, want %s", tc.args, got, tc.want)
		}
	}
}
