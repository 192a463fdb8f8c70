package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/mcpserver"
	"github.com/airlock-dev/airlock/telemetry"
)

// Options configure a [Server]. Engine, Tokens and MCPServer are required.
type Options struct {
	Engine *engine.Engine
	Tokens *Tokens
	// MCPServer builds the MCP server for one session at /mcp; the front end that builds
	// the runtime knows how (the approver it asks through).
	MCPServer func(ctx context.Context, sess mcpserver.Session) (*mcp.Server, error)
	// MaxBodyBytes bounds a request body; zero means 4 MiB.
	MaxBodyBytes int64
	// Webhook, when set, is posted each new pending approval (webhook.go).
	Webhook *Webhook
	Logger  hclog.Logger
}

// Server is the HTTP front end. Build it with [New], serve [Server.Handler] (or
// [Server.Serve]), end it with [Server.Shutdown].
type Server struct {
	opts    Options
	log     hclog.Logger
	routes  []route
	handler http.Handler
	mcp     http.Handler
	idem    *idempotency
	book    *callBook
	limit   *tokenLimit
	// sessionTokens are the tokens minted for one session each.
	sessionTokens *sessionTokens
	// metrics serves the runtime's registry at /metrics; nil when it counts nothing.
	metrics http.Handler

	draining atomic.Bool
	// calls counts the calls running now, from either API; Shutdown waits for them.
	calls tracker

	mu       sync.Mutex
	sessions map[string]*entry
	http     *http.Server
}

// New builds the server.
func New(opts Options) (*Server, error) {
	switch {
	case opts.Engine == nil:
		return nil, errors.New("httpapi: engine is required")
	case opts.Tokens == nil || opts.Tokens.Len() == 0:
		return nil, errors.New("httpapi: at least one token is required")
	case opts.MCPServer == nil:
		return nil, errors.New("httpapi: MCPServer is required")
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 4 << 20
	}
	s := &Server{opts: opts, log: opts.Logger.Named("serve"), sessions: map[string]*entry{}, idem: newIdempotency(), book: newCallBook(),
		limit: newTokenLimit(opts.Engine.Config().Serve.MaxCallsPerToken), sessionTokens: newSessionTokens()}
	s.mcp = s.mcpHandler()
	if m := opts.Engine.Metrics(); m != nil {
		if err := s.registerGauges(m.Registry()); err != nil {
			return nil, fmt.Errorf("httpapi: metrics: %w", err)
		}
		s.metrics = m.Handler()
	}
	s.routes = s.table()
	mux := http.NewServeMux()
	for _, r := range s.routes {
		mux.Handle(r.path, s.dispatch(r))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("no route %s %s; see /v1/openapi.json", r.Method, r.URL.Path))
	})
	s.handler = continueTrace(s.authenticate(mux))
	if wh := opts.Webhook; wh != nil {
		st := opts.Engine.Approvals()
		if st == nil || wh.URL == "" || len(wh.Secret) == 0 {
			return nil, errors.New("httpapi: a webhook needs a runtime with an approvals store, a URL and a secret")
		}
		go s.watchApprovals(st, *wh)
	}
	return s, nil
}

// route is one path and what each method does there. The table is the one list of what
// the server serves: the mux, the 405 answers and the OpenAPI test read it.
type route struct {
	path    string
	public  bool
	methods map[string]http.HandlerFunc
}

// urlPath is the route's path as a URL has it ("/{$}", the root alone, is "/").
func (r route) urlPath() string { return strings.TrimSuffix(r.path, "{$}") }

func (s *Server) table() []route {
	return []route{
		{path: "/healthz", public: true, methods: map[string]http.HandlerFunc{"GET": s.healthz}},
		{path: "/readyz", public: true, methods: map[string]http.HandlerFunc{"GET": s.readyz}},
		{path: "/v1/openapi.json", methods: map[string]http.HandlerFunc{"GET": serveOpenAPI}},
		{path: "/v1/sessions", methods: map[string]http.HandlerFunc{"GET": s.listSessions, "POST": s.createSession}},
		{path: "/v1/approvals", methods: map[string]http.HandlerFunc{"GET": s.listApprovals}},
		{path: "/v1/approvals/{id}", methods: map[string]http.HandlerFunc{"GET": s.getApproval, "POST": s.decideApproval}},
		{path: "/v1/receipts", methods: map[string]http.HandlerFunc{"GET": s.listReceipts}},
		{path: "/v1/receipts/verify", methods: map[string]http.HandlerFunc{"POST": s.verifyReceipts}},
		{path: "/{$}", public: true, methods: map[string]http.HandlerFunc{"GET": servePage}},
		{path: "/page/app.js", public: true, methods: map[string]http.HandlerFunc{"GET": servePage}},
		{path: "/page/style.css", public: true, methods: map[string]http.HandlerFunc{"GET": servePage}},
		{path: "/v1/sessions/{id}", methods: map[string]http.HandlerFunc{"GET": s.getSession, "PATCH": s.patchSession, "DELETE": s.deleteSession}},
		{path: "/v1/sessions/{id}/calls", methods: map[string]http.HandlerFunc{"POST": s.limited(s.postCalls)}},
		{path: "/v1/sessions/{id}/calls/{call_id}", methods: map[string]http.HandlerFunc{"GET": s.getCall, "DELETE": s.cancelCall}},
		{path: "/v1/sessions/{id}/jobs", methods: map[string]http.HandlerFunc{"GET": s.limited(s.listJobs)}},
		{path: "/v1/sessions/{id}/jobs/{job_id}", methods: map[string]http.HandlerFunc{"GET": s.limited(s.getJob), "DELETE": s.limited(s.killJob)}},
		{path: "/v1/sessions/{id}/jobs/{job_id}/output", methods: map[string]http.HandlerFunc{"GET": s.limited(s.jobOutput)}},
		{path: "/v1/sessions/{id}/jobs/{job_id}/input", methods: map[string]http.HandlerFunc{"POST": s.limited(s.jobInput)}},
		{path: "/v1/sessions/{id}/files/{path...}", methods: map[string]http.HandlerFunc{"GET": s.limited(s.getFile), "HEAD": s.limited(s.getFile), "PUT": s.limited(s.putFile)}},
		{path: "/metrics", methods: map[string]http.HandlerFunc{"GET": s.serveMetrics}},
		{path: "/mcp", methods: map[string]http.HandlerFunc{"GET": s.mcp.ServeHTTP, "POST": s.mcp.ServeHTTP, "DELETE": s.mcp.ServeHTTP}},
	}
}

// Routes lists "METHOD PATH" for every route served, sorted, with paths as OpenAPI
// writes them: a trailing wildcard {name...} is {name}.
func (s *Server) Routes() []string {
	var out []string
	for _, r := range s.routes {
		for m := range r.methods {
			out = append(out, m+" "+strings.ReplaceAll(r.urlPath(), "...}", "}"))
		}
	}
	sort.Strings(out)
	return out
}

func (s *Server) dispatch(r route) http.Handler {
	allow := make([]string, 0, len(r.methods))
	for m := range r.methods {
		allow = append(allow, m)
	}
	sort.Strings(allow)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h, ok := r.methods[req.Method]
		if !ok {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed,
				fmt.Sprintf("%s %s: allowed methods are %s", req.Method, r.path, strings.Join(allow, ", ")))
			return
		}
		h(w, req)
	})
}

// isPublic says whether path is served without a token.
func (s *Server) isPublic(path string) bool {
	for _, r := range s.routes {
		if r.public && r.urlPath() == path {
			return true
		}
	}
	return false
}

// authenticate lets a request through only with an accepted bearer token, and puts the
// token's name in its context.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.isPublic(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		tok := bearer(r)
		name, ok := s.opts.Tokens.lookup(tok)
		if !ok {
			if sr, known := s.scoped(w, r, tok); known {
				if sr != nil {
					next.ServeHTTP(w, sr)
				}
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="airlock"`)
			msg := "this endpoint needs an Authorization: Bearer TOKEN header"
			if tok != "" {
				msg = "the bearer token is not one this server accepts"
			}
			writeError(w, http.StatusUnauthorized, CodeUnauthorized, msg)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, name)))
	})
}

// Handler is the server's whole HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if s.draining.Load() {
		writeError(w, http.StatusServiceUnavailable, CodeShuttingDown, "the server is shutting down")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// Serve serves on ln until Shutdown. It returns nil after a shutdown.
func (s *Server) Serve(ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		// No ReadTimeout or WriteTimeout: calls and MCP streams last as long as a command
		// may run; a stalled body read is bounded by the body limit and IdleTimeout.
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    s.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	s.mu.Lock()
	s.http = hs
	s.mu.Unlock()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// continueTrace makes a request's calls part of the caller's trace: their spans continue the
// traceparent header (an MCP request's params._meta.traceparent, read later, wins).
func continueTrace(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Traceparent") != "" {
			r = r.WithContext(telemetry.FromHeaders(r.Context(), r.Header))
		}
		h.ServeHTTP(w, r)
	})
}

// Shutdown stops taking requests and connections, lets running calls finish until grace
// has passed, then ends every session, which cancels what still runs (each such call's
// receipt says interrupted), and closes the connections left. A connection is closed only
// once its call's answer is on it: the HTTP server keeps draining until every call has
// returned and at least a second longer, so an answer written as the grace ran out is still
// carried, and only streams that never end are cut.
func (s *Server) Shutdown(ctx context.Context, grace time.Duration) error {
	s.draining.Store(true)
	s.mu.Lock()
	hs := s.http
	s.mu.Unlock()
	deadline := time.Now().Add(grace)
	sctx, stopHTTP := context.WithCancel(context.WithoutCancel(ctx))
	defer stopHTTP()
	stopped := make(chan error, 1)
	if hs != nil {
		go func() { stopped <- hs.Shutdown(sctx) }()
	} else {
		stopped <- nil
	}
	idle := s.calls.wait()
	select {
	case <-idle:
	case <-time.After(grace):
		s.log.Warn("calls still running after the grace period: cancelling them", "grace", grace.String())
	case <-ctx.Done():
	}
	errs := []error{s.closeSessions(ctx)}
	<-idle
	if hs != nil {
		time.AfterFunc(max(time.Until(deadline), answerDrain), stopHTTP)
		if err := <-stopped; err != nil {
			errs = append(errs, hs.Close())
		}
	}
	return errors.Join(errs...)
}

// answerDrain is how long, at least, the HTTP server may take after the last call returned
// to put the answers on their connections before the connections are closed.
const answerDrain = time.Second

// tracker counts running calls; wait gives a channel closed once none runs.
type tracker struct {
	mu   sync.Mutex
	n    int
	idle chan struct{}
}

func (t *tracker) add() {
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
}

func (t *tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 && t.idle != nil {
		close(t.idle)
		t.idle = nil
	}
}

func (t *tracker) wait() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		c := make(chan struct{})
		close(c)
		return c
	}
	if t.idle == nil {
		t.idle = make(chan struct{})
	}
	return t.idle
}
