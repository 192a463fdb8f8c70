// Package telemetry sends OpenTelemetry traces of Airlock's calls to an OTLP/HTTP receiver.
//
// It is off unless asked for: [telemetry] otlp_endpoint in the config, or the standard
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT variables (with the
// other OTEL_EXPORTER_OTLP_* variables the exporter reads: headers, timeout, certificates).
// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off whatever else says.
// Off, [Provider.Tracer] returns a no-op tracer and a call costs nothing more.
//
// The provider is the engine's own, not the process-global one: a test or a program that
// embeds several engines gets independent traces, and nothing here changes global state.
// The pipeline opens one span per call, named "execute_tool {tool}" after the GenAI
// semantic conventions, with children for policy, approval, queue and execution. Front ends
// continue the caller's trace: an HTTP request's traceparent header ([FromHeaders]), an MCP
// request's params._meta.traceparent ([FromMeta], MCP SEP-414).
package telemetry
