package clientprobe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// API names the wire protocol a request came in on.
type API string

// The APIs spoken.
const (
	Anthropic API = "anthropic-messages"
	OpenAI    API = "openai-responses"
)

// Request is what the script sees of one model request from the client.
type Request struct {
	API API
	// Tools are the names of the tools the client offers its model. An OpenAI namespace's
	// tools are named NAMESPACE.TOOL (Codex puts MCP servers' tools in a namespace).
	Tools []string
	// Calls are the tool calls the model made so far in this conversation, in order, and
	// Results what the client sent back for them (matched by call id).
	Calls   []Call
	Results []Result
	// Body is the request as the client sent it.
	Body json.RawMessage
}

// Call is one tool call the model made.
type Call struct {
	ID, Name string
}

// Result is what the client sent back for a tool call: the text the model reads.
type Result struct {
	CallID  string
	Text    string
	IsError bool
}

// Last returns the result of the most recent call, or false before the first.
func (r Request) Last() (Result, bool) {
	if len(r.Results) == 0 {
		return Result{}, false
	}
	return r.Results[len(r.Results)-1], true
}

// Reply is the model's answer: a tool call when Tool is set, else the final Text.
type Reply struct {
	Tool string
	// Namespace, for the OpenAI API, is the namespace Tool is in (Codex's mcp__SERVER).
	Namespace string
	Args      any
	// Input, for the OpenAI API, makes the call a custom (freeform) tool call with this
	// input instead of JSON arguments: Codex's apply_patch is one.
	Input string
	Text  string
}

// Script decides the model's reply to each request that offers tools.
type Script func(Request) Reply

// Server is a running loopback model server.
type Server struct {
	URL    string
	script Script
	srv    *http.Server
	ln     net.Listener

	mu       sync.Mutex
	requests []Request
	errs     []error
}

// Start serves script on 127.0.0.1 on a port of the kernel's choosing.
func Start(script Script) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("clientprobe: listen: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), script: script, ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.messages)
	mux.HandleFunc("POST /v1/responses", s.responses)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// Claude Code checks the base URL with HEAD / before its first request.
		if r.Method == http.MethodHead || r.Method == http.MethodGet {
			w.WriteHeader(http.StatusOK)
			return
		}
		http.NotFound(w, r)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Requests returns the requests that offered tools, in the order they came.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Err returns what the server could not read of the client's requests.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

func (s *Server) fail(w http.ResponseWriter, err error) {
	s.mu.Lock()
	s.errs = append(s.errs, err)
	s.mu.Unlock()
	http.Error(w, err.Error(), http.StatusBadRequest)
}

// reply records req and asks the script, or answers a side request with text.
func (s *Server) reply(req Request) Reply {
	if len(req.Tools) == 0 {
		return Reply{Text: "ok"}
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	return s.script(req)
}

func readBody(r *http.Request) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r.Body, 64<<20))
}

// sse writes server-sent events.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (e *sse) event(name string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", name, b)
	if e.f != nil {
		e.f.Flush()
	}
}

// argsJSON is a reply's arguments as a JSON text.
func argsJSON(a any) string {
	if a == nil {
		return "{}"
	}
	b, err := json.Marshal(a)
	if err != nil {
		return "{}"
	}
	return string(b)
}
