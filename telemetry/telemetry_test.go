package telemetry

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

func TestValidateNamesTheField(t *testing.T) {
	for _, bad := range []string{"127.0.0.1:4318", "ftp://x", "http://", "http://h:1/?a=b"} {
		err := Config{OTLPEndpoint: bad}.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), "telemetry.otlp_endpoint: ") {
			t.Errorf("%q: %v, want an error naming telemetry.otlp_endpoint", bad, err)
		}
	}
	for _, good := range []string{"", "http://127.0.0.1:4318", "https://otel.example/base/"} {
		if err := (Config{OTLPEndpoint: good}).Validate(); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}

// Off unless the config or the standard variables ask; the kill switches win.
func TestOnlyWhenAsked(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		t.Setenv(k, "")
	}
	on := Config{OTLPEndpoint: "http://127.0.0.1:1"}
	cases := []struct {
		name string
		cfg  Config
		env  map[string]string
		want bool
	}{
		{"nothing", Config{}, nil, false},
		{"config", on, nil, true},
		{"env endpoint", Config{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, true},
		{"env traces endpoint", Config{}, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces"}, true},
		{"disabled", on, map[string]string{"OTEL_SDK_DISABLED": "true"}, false},
		{"exporter none", on, map[string]string{"OTEL_TRACES_EXPORTER": "none"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			p, err := New(context.Background(), c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if (p != nil) != c.want {
				t.Fatalf("provider %v, want on=%v", p, c.want)
			}
			_ = p.Shutdown(context.Background())
		})
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	if _, err := New(context.Background(), on); err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_PROTOCOL") {
		t.Fatalf("grpc: %v, want a refusal naming the variable", err)
	}
}

func TestFromMetaAndHeaders(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for name, ctx := range map[string]context.Context{
		"meta":    FromMeta(context.Background(), map[string]any{"traceparent": tp, "other": 1}),
		"headers": FromHeaders(context.Background(), http.Header{"Traceparent": {tp}}),
	} {
		sc := spanContext(ctx)
		if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" || !sc.IsRemote() {
			t.Errorf("%s: %v", name, sc)
		}
	}
	if sc := spanContext(FromMeta(context.Background(), map[string]any{"traceparent": 42})); sc.IsValid() {
		t.Errorf("a non-string traceparent was read: %v", sc)
	}
}

func spanContext(ctx context.Context) trace.SpanContext { return trace.SpanContextFromContext(ctx) }
