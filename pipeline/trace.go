package pipeline

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Spans: one "execute_tool {tool}" span per call, after the OpenTelemetry GenAI semantic
// conventions (gen_ai.operation.name, gen_ai.tool.name, gen_ai.tool.call.id, error.type),
// with Airlock's own attributes (airlock.*) set once the call is over, and children for the
// steps a person investigating a slow or refused call asks about: policy, approval (which
// includes a person's wait), queue (the scheduler's wait for a slot) and execution.

// maxSpanToolName bounds the tool name in a span's name: the name is the model's text until
// the registry knows it.
const maxSpanToolName = 64

// tracerOf is the tracer a pipeline uses: the options', or one that records nothing.
func tracerOf(o Options) trace.Tracer {
	if o.Tracer == nil {
		return noop.NewTracerProvider().Tracer("")
	}
	return o.Tracer
}

// startCallSpan opens the call's span under ctx's (the front end continued the caller's).
func (p *Pipeline) startCallSpan(ctx context.Context, f *flight) context.Context {
	name := f.call.Name
	if len(name) > maxSpanToolName {
		name = name[:maxSpanToolName]
	}
	ctx, f.span = p.tracer.Start(ctx, "execute_tool "+name, trace.WithSpanKind(trace.SpanKindInternal))
	if f.span.IsRecording() { // with traces off, a call builds no attributes
		f.span.SetAttributes(
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", f.call.Name),
			attribute.String("gen_ai.tool.call.id", f.call.ID),
			attribute.String("airlock.session.id", p.opts.SessionID),
			attribute.String("airlock.backend", p.backend),
		)
	}
	return ctx
}

// step opens a child span of the call's span.
func (p *Pipeline) step(ctx context.Context, f *flight, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	return p.tracer.Start(trace.ContextWithSpan(ctx, f.span), name, opts...)
}

// queued records the scheduler's wait: from the decision to the start of the call's slot.
func (p *Pipeline) queued(ctx context.Context, f *flight) {
	if f.decided.IsZero() {
		return
	}
	_, s := p.step(ctx, f, "queue", trace.WithTimestamp(f.decided))
	s.End()
}

// endCallSpan closes the call's span with what was decided and what happened.
func (p *Pipeline) endCallSpan(f *flight) {
	if !f.span.IsRecording() {
		return
	}
	r, rec := f.result, f.rec
	attrs := []attribute.KeyValue{
		attribute.String("airlock.decision", rec.Decision),
		attribute.String("airlock.decided_by", rec.DecidedBy),
		attribute.String("airlock.outcome", string(rec.Outcome)),
		attribute.String("airlock.status", string(r.Status)),
	}
	if rec.ReasonCode != "" {
		attrs = append(attrs, attribute.String("airlock.reason_code", rec.ReasonCode))
	}
	if rec.Risk != "" {
		attrs = append(attrs, attribute.String("airlock.risk", rec.Risk))
	}
	if r.Metadata.ExitCode != nil {
		attrs = append(attrs, attribute.Int("airlock.exit_code", *r.Metadata.ExitCode))
	}
	if r.Status != StatusOK {
		et := r.ErrorCode
		if et == "" {
			et = string(r.Status)
		}
		attrs = append(attrs, attribute.String("error.type", et))
		f.span.SetStatus(codes.Error, et)
	}
	f.span.SetAttributes(attrs...)
	f.span.End()
}

// stamp notes when the call was decided, for its queue span.
func (f *flight) stamp() { f.decided = time.Now() }
