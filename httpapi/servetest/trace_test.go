package servetest

import (
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP trace receiver on loopback: it keeps every span posted to
// /v1/traces.
type otlpReceiver struct {
	url   string
	mu    sync.Mutex
	spans []*tracepb.Span
	got   chan struct{}
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &otlpReceiver{url: "http://" + ln.Addr().String(), got: make(chan struct{}, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var msg coltrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &msg)
		}
		if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range msg.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		select {
		case r.got <- struct{}{}:
		default:
		}
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	})
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

// span waits for an execute_tool span of the call whose gen_ai.tool.call.id matches.
func (r *otlpReceiver) span(t *testing.T, name string, match func(*tracepb.Span) bool) *tracepb.Span {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		r.mu.Lock()
		for _, s := range r.spans {
			if s.Name == name && match(s) {
				r.mu.Unlock()
				return s
			}
		}
		r.mu.Unlock()
		select {
		case <-r.got:
		case <-deadline:
			t.Fatalf("no %q span arrived", name)
		}
	}
}

func (r *otlpReceiver) children(parent []byte) map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]bool{}
	for _, s := range r.spans {
		if string(s.ParentSpanId) == string(parent) {
			out[s.Name] = true
		}
	}
	return out
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			if v := kv.Value.GetStringValue(); v != "" {
				return v
			}
			if kv.Value.GetValue() != nil {
				return kv.Value.String()
			}
		}
	}
	return ""
}

type traceTransport struct{ token, traceparent string }

func (tt traceTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tt.token)
	if tt.traceparent != "" {
		r.Header.Set("Traceparent", tt.traceparent)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A call over MCP continues the trace its request names in params._meta.traceparent, and a
// call over the HTTP API the one in its traceparent header: the execute_tool span arrives at
// an OTLP receiver with that trace and parent, the GenAI attributes, Airlock's decision and
// outcome, and its steps as children.
func TestExecuteToolSpansContinueTheCallersTrace(t *testing.T) {
	recv := newOTLPReceiver(t)
	dir, config := project(t, "[telemetry]\notlp_endpoint = \""+recv.url+"\"\nservice_name = \"airlock-servetest\"\n")
	s := start(t, dir, config)

	// MCP: the header names another trace; _meta's wins for the call.
	const (
		metaTrace  = "4bf92f3577b34da6a3ce929d0e0e4736"
		metaParent = "00f067aa0ba902b7"
		hdrTrace   = "0af7651916cd43dd8448eb211c80319c"
		hdrParent  = "b7ad6b7169203331"
	)
	c := mcp.NewClient(&mcp.Implementation{Name: "trace-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp",
		HTTPClient: &http.Client{Transport: traceTransport{token: s.token, traceparent: "00-" + hdrTrace + "-" + hdrParent + "-01"}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "terminal", Arguments: map[string]any{"command": "echo traced"},
		Meta: mcp.Meta{"traceparent": "00-" + metaTrace + "-" + metaParent + "-01"},
	})
	if err != nil || res.IsError {
		t.Fatalf("call over MCP: %v %+v", err, res)
	}
	sp := recv.span(t, "execute_tool terminal", func(s *tracepb.Span) bool { return hex.EncodeToString(s.TraceId) == metaTrace })
	if got := hex.EncodeToString(sp.ParentSpanId); got != metaParent {
		t.Errorf("MCP call's span parent %s, want %s from _meta.traceparent", got, metaParent)
	}
	for k, want := range map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "terminal",
		"airlock.decision": "allow", "airlock.outcome": "executed", "airlock.backend": "local"} {
		if got := attr(sp, k); got != want {
			t.Errorf("span attribute %s = %q, want %q", k, got, want)
		}
	}
	if attr(sp, "gen_ai.tool.call.id") == "" || attr(sp, "airlock.exit_code") == "" {
		t.Errorf("span lacks the call id or exit code: %v", sp.Attributes)
	}
	kids := recv.children(sp.SpanId)
	for _, step := range []string{"policy", "approval", "queue", "execution"} {
		if !kids[step] {
			t.Errorf("no %s child span (children: %v)", step, kids)
		}
	}

	// HTTP API: a refused call's span carries the caller's parent and the reason as error.type.
	var sess struct{ ID string }
	s.do(t, "POST", "/v1/sessions", "", &sess)
	req := s.request("POST", "/v1/sessions/"+sess.ID+"/calls", `{"name":"read_file","call_id":"http-1","arguments":{"path":"/etc/shadow"}}`)
	req.Header.Set("Traceparent", "00-"+hdrTrace+"-"+hdrParent+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	hs := recv.span(t, "execute_tool read_file", func(s *tracepb.Span) bool { return attr(s, "gen_ai.tool.call.id") == "http-1" })
	if hex.EncodeToString(hs.TraceId) != hdrTrace || hex.EncodeToString(hs.ParentSpanId) != hdrParent {
		t.Errorf("HTTP call's span in trace %x under %x, want %s under %s", hs.TraceId, hs.ParentSpanId, hdrTrace, hdrParent)
	}
	if attr(hs, "airlock.decision") != "deny" || attr(hs, "error.type") == "" || hs.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("refused call's span: %v status %v", hs.Attributes, hs.Status)
	}
}
