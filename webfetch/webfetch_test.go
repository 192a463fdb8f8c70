package webfetch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/receipt"
	"github.com/airlock-dev/airlock/tool"
	"github.com/airlock-dev/airlock/urlguard"
)

// testGuard allows loopback — only here, in test code — so that the handler can reach an
// httptest server on 127.0.0.1. Every other rule stands.
func testGuard(t *testing.T) *urlguard.Guard {
	t.Helper()
	g, err := urlguard.New(urlguard.Config{Mode: urlguard.ModeOpen}, urlguard.AllowLoopbackForTesting())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

type denials struct {
	mu   sync.Mutex
	list []Denial
}

func (d *denials) add(x Denial) { d.mu.Lock(); d.list = append(d.list, x); d.mu.Unlock() }
func (d *denials) all() []Denial {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Denial(nil), d.list...)
}

func site(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>t</title><script>var secret="SCRIPT";</script><style>p{}</style></head>
<body><h1>Heading</h1><p>Some <a href="/other">link</a> &amp; <b>bold</b> text.</p><ul><li>one</li><li>two</li></ul></body></html>`)
	})
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "plain <b>not html</b>\n")
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"a":1}`)
	})
	mux.HandleFunc("/bin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write([]byte{0, 1, 2, 3, 0xff, 0xfe, 0, 0})
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		chunk := strings.Repeat("x", 4096)
		for i := 0; i < 256; i++ { // 1 MiB, streamed
			if _, err := fmt.Fprint(w, chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "method=%s x-test=%s ua=%s", r.Method, r.Header.Get("X-Test"), r.UserAgent())
	})
	mux.HandleFunc("/redirect/", func(w http.ResponseWriter, r *http.Request) {
		// /redirect/N → /redirect/N-1 … → /text
		var n int
		fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/redirect/"), "%d", &n)
		if n <= 0 {
			http.Redirect(w, r, "/text", http.StatusFound)
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/redirect/%d", n-1), http.StatusMovedPermanently)
	})
	mux.HandleFunc("/to", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "start")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func call(t *testing.T, o Options, a map[string]any) *tool.Output {
	t.Helper()
	def, err := Definition(o)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(a)
	out, err := def.Handler(context.Background(), &tool.Invocation{CallID: "c1", SessionID: "s1", Args: raw})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFetchKinds(t *testing.T) {
	t.Parallel()
	srv, _ := site(t)
	o := Options{Guard: testGuard(t)}
	cases := []struct {
		path, kind string
		has        []string
		hasNot     []string
	}{
		{"/page", "html", []string{"# Heading", "[link](" + srv.URL + "/other)", "**bold**", "- one"}, []string{"SCRIPT", "p{}", "<h1>"}},
		{"/text", "text", []string{"plain <b>not html</b>"}, nil},
		{"/json", "text", []string{`{"a":1}`}, nil},
		{"/bin", "binary", []string{"binary content", "8 bytes"}, []string{"\x00"}},
	}
	for _, tc := range cases {
		out := call(t, o, map[string]any{"url": srv.URL + tc.path})
		if out.Status != tool.StatusOK {
			t.Fatalf("%s: %s %s", tc.path, out.ErrorCode, out.ErrorMessage)
		}
		r := out.Data.(Result)
		if r.Kind != tc.kind || r.Status != 200 || r.FinalURL != srv.URL+tc.path {
			t.Errorf("%s: result %+v", tc.path, r)
		}
		for _, s := range tc.has {
			if !strings.Contains(out.Content, s) {
				t.Errorf("%s: content %q lacks %q", tc.path, out.Content, s)
			}
		}
		for _, s := range tc.hasNot {
			if strings.Contains(out.Content, s) {
				t.Errorf("%s: content %q holds %q", tc.path, out.Content, s)
			}
		}
	}
}

func TestFetchCapsWhileStreaming(t *testing.T) {
	t.Parallel()
	srv, _ := site(t)
	o := Options{Guard: testGuard(t)}
	out := call(t, o, map[string]any{"url": srv.URL + "/big", "max_bytes": 10000})
	r := out.Data.(Result)
	if !r.Truncated || r.Bytes != 10000 || !out.Truncated || !strings.Contains(out.Content, "cut at max_bytes") {
		t.Fatalf("cut fetch: %+v", r)
	}
	out = call(t, o, map[string]any{"url": srv.URL + "/slow", "timeout": 0.3})
	if out.ErrorCode != CodeFetchTimeout {
		t.Fatalf("slow body: %s %s, want %s", out.ErrorCode, out.ErrorMessage, CodeFetchTimeout)
	}
}

func TestFetchRedirects(t *testing.T) {
	t.Parallel()
	srv, _ := site(t)
	d := &denials{}
	o := Options{Guard: testGuard(t), OnDenied: d.add}

	out := call(t, o, map[string]any{"url": srv.URL + "/redirect/3"})
	r := out.Data.(Result)
	if out.Status != tool.StatusOK || r.FinalURL != srv.URL+"/text" || len(r.Redirects) != 4 {
		t.Fatalf("4 redirects: %s %+v", out.ErrorCode, r)
	}
	if out := call(t, o, map[string]any{"url": srv.URL + "/redirect/5"}); out.ErrorCode != CodeTooManyRedirects {
		t.Fatalf("6 redirects: %s", out.ErrorCode)
	}
	for _, target := range []struct {
		loc    string
		reason urlguard.Reason
	}{
		{"http://169.254.169.254/latest/meta-data/", urlguard.Metadata},
		{"http://[::ffff:a9fe:a9fe]/", urlguard.Metadata},
		{"http://10.0.0.1/", urlguard.Private},
		{"http://metadata.google.internal/", urlguard.Metadata},
		{"gopher://127.0.0.1/", urlguard.UnsupportedScheme},
	} {
		out := call(t, o, map[string]any{"url": srv.URL + "/to?u=" + target.loc})
		if out.ErrorCode != CodeNetworkDenied || !strings.Contains(out.ErrorMessage, string(target.reason)) {
			t.Errorf("redirect to %s: %s %s", target.loc, out.ErrorCode, out.ErrorMessage)
		}
	}
	got := d.all()
	if len(got) != 5 || got[0].Reason != urlguard.Metadata || got[0].CallID != "c1" || got[0].Host != "169.254.169.254" || got[0].Port != 80 {
		t.Fatalf("denials recorded: %+v", got)
	}
}

func TestFetchRefusals(t *testing.T) {
	t.Parallel()
	srv, hits := site(t)
	d := &denials{}
	o := Options{Guard: testGuard(t), OnDenied: d.add}
	host := strings.TrimPrefix(srv.URL, "http://")
	before := hits.Load()
	for _, tc := range []struct {
		args map[string]any
		code string
	}{
		{map[string]any{"url": "http://user:pw@" + host + "/text"}, CodeCredentialsInURL},
		{map[string]any{"url": srv.URL + "/echo", "headers": map[string]string{"authorization": "Bearer x"}}, CodeForbiddenHeader},
		{map[string]any{"url": srv.URL + "/echo", "headers": map[string]string{"Cookie": "a=b"}}, CodeForbiddenHeader},
		{map[string]any{"url": "http://2852039166/"}, CodeNetworkDenied},
		{map[string]any{"url": "file:///etc/passwd"}, CodeNetworkDenied},
	} {
		if out := call(t, o, tc.args); out.ErrorCode != tc.code {
			t.Errorf("%v: %s (%s), want %s", tc.args, out.ErrorCode, out.ErrorMessage, tc.code)
		}
	}
	if hits.Load() != before {
		t.Fatal("a refused fetch reached the server")
	}

	// Without the test allowance the guard refuses the loopback test server itself.
	strict, err := urlguard.New(urlguard.Config{Mode: urlguard.ModeOpen})
	if err != nil {
		t.Fatal(err)
	}
	if out := call(t, Options{Guard: strict}, map[string]any{"url": srv.URL + "/text"}); out.ErrorCode != CodeNetworkDenied || !strings.Contains(out.ErrorMessage, "loopback") {
		t.Fatalf("strict guard on loopback: %s %s", out.ErrorCode, out.ErrorMessage)
	}
	if hits.Load() != before {
		t.Fatal("the strict guard let a request reach the loopback server")
	}
}

func TestFetchHeadersAndHead(t *testing.T) {
	t.Parallel()
	srv, _ := site(t)
	o := Options{Guard: testGuard(t), UserAgent: "ua-test"}
	out := call(t, o, map[string]any{"url": srv.URL + "/echo", "headers": map[string]string{"X-Test": "yes"}})
	if !strings.Contains(out.Content, "method=GET x-test=yes ua=ua-test") {
		t.Fatalf("echo: %q", out.Content)
	}
	out = call(t, o, map[string]any{"url": srv.URL + "/echo", "method": "HEAD"})
	if r := out.Data.(Result); out.Status != tool.StatusOK || r.Status != 200 || r.Bytes != 0 || r.Kind != "empty" {
		t.Fatalf("HEAD: %+v", out)
	}
}

// TestThroughPipeline: web_fetch runs like every tool, through the registry, the schema,
// the pre-hook and the handler, with a receipt; a blocked URL is denied before its handler.
func TestThroughPipeline(t *testing.T) {
	srv, hits := site(t)
	dir := t.TempDir()
	env, err := local.New(local.Config{Workspace: dir, DefaultTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	l, err := receipt.Open(filepath.Join(dir, "receipts.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	g := testGuard(t)
	var handled atomic.Int32
	def, err := Definition(Options{Guard: g})
	if err != nil {
		t.Fatal(err)
	}
	inner := def.Handler
	def.Handler = func(ctx context.Context, inv *tool.Invocation) (*tool.Output, error) {
		handled.Add(1)
		return inner(ctx, inv)
	}
	reg := tool.NewRegistry()
	if err := reg.Register(def); err != nil {
		t.Fatal(err)
	}
	pol, err := pathpolicy.New(pathpolicy.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	acfg := approval.DefaultConfig()
	acfg.Mode = approval.ModeAuto
	gate, err := approval.NewGate(acfg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.New(pipeline.Options{Registry: reg, Env: env, Ledger: l, Policy: pol, Approval: &approval.Step{Gate: gate},
		PreHooks: []pipeline.PreHook{&Hook{Guard: g}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ok := p.Run(ctx, pipeline.Call{ID: "ok", Name: Name, Arguments: json.RawMessage(`{"url":"` + srv.URL + `/text"}`)})
	if ok.Status != pipeline.StatusOK || !strings.Contains(ok.Content, "plain") || ok.Receipt == nil {
		t.Fatalf("allowed fetch: %+v", ok)
	}
	before := hits.Load()
	for _, c := range []struct{ id, args, code string }{
		{"meta", `{"url":"http://0xa9fea9fe/"}`, CodeNetworkDenied},
		{"schema", `{"url":"` + srv.URL + `/echo","headers":{"COOKIE":"a"}}`, "input_validation_failed"},
		{"method", `{"url":"` + srv.URL + `/echo","method":"POST"}`, "input_validation_failed"},
	} {
		handledBefore := handled.Load()
		r := p.Run(ctx, pipeline.Call{ID: c.id, Name: Name, Arguments: json.RawMessage(c.args)})
		if r.ErrorCode != c.code || r.Status == pipeline.StatusOK {
			t.Errorf("%s: %s %s, want %s", c.id, r.Status, r.ErrorCode, c.code)
		}
		if handled.Load() != handledBefore {
			t.Errorf("%s: a denied call reached the handler", c.id)
		}
		if r.Receipt == nil || r.Receipt.Decision != "deny" {
			t.Errorf("%s: receipt %+v", c.id, r.Receipt)
		}
	}
	if hits.Load() != before {
		t.Fatal("a denied call reached the server")
	}
}
