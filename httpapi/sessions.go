package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/plan"
	"github.com/airlock-dev/airlock/receipt"
)

// Session kinds: opened by POST /v1/sessions, or by an MCP client at /mcp.
const (
	KindAPI = "api"
	KindMCP = "mcp"
)

// entry is one runtime session the server opened, and whose it is.
type entry struct {
	sess    *engine.Session
	owner   string
	kind    string
	created time.Time

	mu       sync.Mutex
	lastUsed time.Time
	mcp      *mcp.ServerSession
}

func (e *entry) touch() {
	e.mu.Lock()
	e.lastUsed = time.Now()
	e.mu.Unlock()
}

// SessionInfo is a session as the API shows it.
type SessionInfo struct {
	ID        string    `json:"id"`
	Kind      string    `json:"kind"`
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt is when the session closes if no call comes before; absent when it stays
	// open until closed. IdleTTLSeconds is the idle time that closes it.
	ExpiresAt      *time.Time `json:"expires_at,omitempty"`
	IdleTTLSeconds float64    `json:"idle_ttl_seconds"`
	Isolation      Isolation  `json:"isolation"`
	// Plan is the state of the session's plan, absent without one.
	Plan *plan.State `json:"plan,omitempty"`
}

// CreatedSession answers POST /v1/sessions: the session, and the token valid for it alone
// when one was asked for (shown this once; the server keeps only its hash).
type CreatedSession struct {
	SessionInfo
	SessionToken string `json:"session_token,omitempty"`
}

// Isolation is what the session's environment says of itself: where commands run and what
// it really enforces there.
type Isolation struct {
	Backend      string               `json:"backend"`
	Mode         string               `json:"mode,omitempty"`
	Workspace    string               `json:"workspace"`
	Target       string               `json:"target,omitempty"`
	Capabilities backend.Capabilities `json:"capabilities"`
	Limits       backend.Limits       `json:"limits"`
	Notes        []string             `json:"notes,omitempty"`
}

func (s *Server) info(e *entry) SessionInfo {
	d := e.sess.Environment().Describe()
	ttl := e.sess.IdleTTL()
	e.mu.Lock()
	last := e.lastUsed
	e.mu.Unlock()
	si := SessionInfo{
		ID: e.sess.ID(), Kind: e.kind, CreatedAt: e.created.UTC(), IdleTTLSeconds: ttl.Seconds(),
		Isolation: Isolation{Backend: d.Kind, Mode: d.Mode, Workspace: d.Workspace, Target: d.Target,
			Capabilities: d.Capabilities, Limits: d.Limits, Notes: d.Notes},
		Plan: e.sess.Plan(),
	}
	if ttl > 0 {
		exp := last.Add(ttl).UTC()
		si.ExpiresAt = &exp
	}
	return si
}

// open opens a runtime session for caller and keeps it until it closes.
func (s *Server) open(ctx context.Context, caller, kind string, opts ...engine.SessionOption) (*entry, error) {
	sess, err := s.opts.Engine.Session(ctx, "", opts...)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	e := &entry{sess: sess, owner: caller, kind: kind, created: now, lastUsed: now}
	s.mu.Lock()
	s.sessions[sess.ID()] = e
	s.mu.Unlock()
	// Closed by DELETE, by the idle reaper, with its MCP session, or at shutdown: forgotten
	// here, and its MCP session (if any) ends too.
	sess.OnClose(func() {
		s.mu.Lock()
		delete(s.sessions, sess.ID())
		s.mu.Unlock()
		s.book.forget(sess.ID())
		e.mu.Lock()
		ss := e.mcp
		e.mu.Unlock()
		if ss != nil {
			_ = ss.Close()
		}
	})
	s.log.Info("session opened", "session_id", sess.ID(), "caller", caller, "kind", kind)
	return e, nil
}

// session returns the session the path names, or answers 404 session_not_found: another
// token's session is not found, never shown.
func (s *Server) session(w http.ResponseWriter, r *http.Request) (*entry, bool) {
	s.mu.Lock()
	e, ok := s.sessions[r.PathValue("id")]
	s.mu.Unlock()
	if !ok || e.owner != Caller(r.Context()) {
		writeError(w, http.StatusNotFound, CodeSessionNotFound,
			fmt.Sprintf("no session %q for this token (closed, expired, or another token's)", r.PathValue("id")))
		return nil, false
	}
	return e, true
}

// createSession is POST /v1/sessions. The body is empty or an empty JSON object: the
// session's backend, workspace and limits are the server's config.
func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		writeError(w, http.StatusServiceUnavailable, CodeShuttingDown, "the server is shutting down")
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	// session_token asks for a token valid for this session only (sessiontokens.go).
	var req struct {
		SessionToken bool       `json:"session_token"`
		Plan         *plan.Spec `json:"plan"`
	}
	if len(body) > 0 {
		if err := decodeStrict(body, &req); err != nil {
			writeDecodeError(w, err)
			return
		}
	}
	var opts []engine.SessionOption
	if req.Plan != nil {
		opts = append(opts, engine.WithPlan(*req.Plan))
	}
	e, err := s.open(r.Context(), Caller(r.Context()), KindAPI, opts...)
	if errors.Is(err, engine.ErrInvalidPlan) {
		writeError(w, http.StatusBadRequest, CodeInvalidPlan, err.Error())
		return
	}
	if err != nil {
		s.log.Error("session open failed", "error", err)
		writeError(w, http.StatusInternalServerError, CodeSessionOpenFailed, "the session could not be opened: "+err.Error())
		return
	}
	out := CreatedSession{SessionInfo: s.info(e)}
	if req.SessionToken {
		if out.SessionToken, err = s.sessionTokens.mint(e); err != nil {
			_ = e.sess.Close(r.Context())
			writeError(w, http.StatusInternalServerError, CodeSessionOpenFailed, "the session token could not be made: "+err.Error())
			return
		}
	}
	w.Header().Set("Location", "/v1/sessions/"+e.sess.ID())
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	e, ok := s.session(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, s.info(e))
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	caller := Caller(r.Context())
	s.mu.Lock()
	var mine []*entry
	for _, e := range s.sessions {
		if e.owner == caller {
			mine = append(mine, e)
		}
	}
	s.mu.Unlock()
	sort.Slice(mine, func(i, j int) bool { return mine[i].created.Before(mine[j].created) })
	out := make([]SessionInfo, len(mine))
	for i, e := range mine {
		out[i] = s.info(e)
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out})
}

// deleteSession closes the session: running calls are cancelled (their receipts say
// interrupted), its jobs end, its environment closes.
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	e, ok := s.session(w, r)
	if !ok {
		return
	}
	if err := e.sess.Close(r.Context()); err != nil {
		s.log.Warn("session close failed", "session_id", e.sess.ID(), "error", err)
	}
	w.WriteHeader(http.StatusNoContent)
}

// closeSessions ends every session the server opened.
func (s *Server) closeSessions(ctx context.Context) error {
	s.mu.Lock()
	all := make([]*entry, 0, len(s.sessions))
	for _, e := range s.sessions {
		all = append(all, e)
	}
	s.mu.Unlock()
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, e := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.sess.Close(context.WithoutCancel(ctx))
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// callerSession is a runtime session as one caller uses it: each call carries the
// caller's name into its receipt, and counts as running for shutdown.
type callerSession struct {
	*engine.Session
	caller string
	s      *Server
	e      *entry
}

// Run runs one call for the caller.
func (c *callerSession) Run(ctx context.Context, call pipeline.Call) pipeline.Result {
	return c.RunBatch(ctx, []pipeline.Call{call})[0]
}

// RunBatch runs calls for the caller.
func (c *callerSession) RunBatch(ctx context.Context, calls []pipeline.Call) []pipeline.Result {
	c.s.calls.add()
	defer c.s.calls.done()
	c.e.touch()
	defer c.e.touch()
	for i := range calls {
		cl := receipt.Client{}
		if calls[i].Client != nil {
			cl = *calls[i].Client
		}
		cl.Caller = c.caller
		calls[i].Client = &cl
		if calls[i].ID == "" {
			// The ID the pipeline would give it, known now so that the call can be polled.
			calls[i].ID = pipeline.GenerateCallID(calls[i], i)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	states := c.s.book.begin(c.Session.ID(), calls, cancel)
	res := c.Session.RunBatch(ctx, calls)
	c.s.book.finish(states, res)
	return res
}

// readBody reads a request body up to the limit, answering the error itself.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !isJSON(ct) {
		writeError(w, http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
			fmt.Sprintf("Content-Type %q: send application/json", ct))
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, CodeBodyTooLarge,
				fmt.Sprintf("the body is larger than %d bytes, this server's limit ([serve] max_body_bytes)", mbe.Limit))
			return nil, false
		}
		writeError(w, http.StatusBadRequest, CodeInvalidJSON, "the body could not be read: "+err.Error())
		return nil, false
	}
	return body, true
}

func isJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// decodeStrict decodes one JSON value into v, refusing unknown fields and trailing text.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more text after the JSON value")
	}
	return nil
}

func writeDecodeError(w http.ResponseWriter, err error) {
	code := CodeInvalidJSON
	if strings.HasPrefix(err.Error(), "json: unknown field ") {
		code = CodeUnknownField
	}
	writeError(w, http.StatusBadRequest, code, err.Error())
}
