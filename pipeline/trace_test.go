package pipeline_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/airlock-dev/airlock/pipeline"
)

// Each call is one execute_tool span under the caller's trace, with its steps as children
// and what was decided and what happened as attributes; a refused call's span says why.
func TestCallSpans(t *testing.T) {
	f := newFixture(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	deny := policyFunc(func(_ context.Context, r *pipeline.Request) (pipeline.Verdict, error) {
		if r.Call.ID == "c-no" {
			return pipeline.Verdict{Decision: pipeline.Deny, Code: "outside_roots", DecidedBy: "test"}, nil
		}
		return allowAll{}.Check(context.Background(), r)
	})
	o := f.options
	o.Tracer, o.Policy = tp.Tracer("test"), deny
	p, err := pipeline.New(o)
	if err != nil {
		t.Fatal(err)
	}
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
	res := p.RunBatch(ctx, []pipeline.Call{touch("yes"), touch("no")})
	if res[0].Status != pipeline.StatusOK || res[1].Status != pipeline.StatusDenied {
		t.Fatalf("results: %+v", res)
	}
	spans := map[string][]sdktrace.ReadOnlySpan{}
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = append(spans[s.Name()], s)
		byID[s.SpanContext().SpanID()] = s
	}
	calls := spans["execute_tool touch"]
	if len(calls) != 2 {
		t.Fatalf("execute_tool spans: %d, want 2 (all: %v)", len(calls), names(rec.Ended()))
	}
	for _, s := range calls {
		if s.Parent().SpanID() != parent.SpanID() || s.SpanContext().TraceID() != parent.TraceID() {
			t.Errorf("%s: parent %v, want the caller's %v", s.Name(), s.Parent(), parent)
		}
		a := attrs(s)
		id := a["gen_ai.tool.call.id"]
		if a["gen_ai.operation.name"] != "execute_tool" || a["gen_ai.tool.name"] != "touch" {
			t.Errorf("%s attributes: %v", id, a)
		}
		switch id {
		case "c-yes":
			if a["airlock.decision"] != "allow" || a["airlock.outcome"] != "executed" || a["error.type"] != "" {
				t.Errorf("allowed call's attributes: %v", a)
			}
		case "c-no":
			if a["airlock.decision"] != "deny" || a["error.type"] != "outside_roots" || a["airlock.outcome"] != "not_executed" {
				t.Errorf("denied call's attributes: %v", a)
			}
		default:
			t.Errorf("span for unknown call %q", id)
		}
	}
	for _, step := range []string{"policy", "approval", "queue", "execution"} {
		for _, s := range spans[step] {
			if up, ok := byID[s.Parent().SpanID()]; !ok || up.Name() != "execute_tool touch" {
				t.Errorf("%s span's parent is not a call span", step)
			}
		}
	}
	// Both calls were checked by policy; only the allowed one was approved, queued and run.
	if len(spans["policy"]) != 2 || len(spans["approval"]) != 1 || len(spans["queue"]) != 1 || len(spans["execution"]) != 1 {
		t.Errorf("step spans: %v", names(rec.Ended()))
	}
}

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func names(ss []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name())
	}
	return out
}
