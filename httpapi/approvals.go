package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/approval/pending"
	"github.com/airlock-dev/airlock/engine"
)

// The approvals API is a window on the runtime's own approvals store ([pending.Store]),
// the one `airlock approvals` answers from a terminal: a question answered here is answered
// for the call that asked, however it waits (the repeated call, approval_wait, the MCP
// client). A token sees the approvals of the sessions it opened and no others; another
// token's approval is not found, exactly as a missing one, so an id says nothing.

// Codes of the approvals API.
const (
	CodeApprovalNotFound = engine.CodeApprovalNotFound // the same meaning as the runtime's
	CodeApprovalDecided  = "approval_decided"
	CodeInvalidDecision  = "invalid_decision"
	CodeCrossSite        = "cross_site_request"
	CodeApprovalsOff     = "approvals_unavailable"
)

func init() {
	Codes = append(Codes, CodeApprovalNotFound, CodeApprovalDecided, CodeInvalidDecision, CodeCrossSite, CodeApprovalsOff)
}

// followPoll is how often a follow stream reads the store: answers may come from another
// process (`airlock approvals`), which only the file tells of.
const followPoll = 250 * time.Millisecond

// Approval is an approval as the API shows it: the store's record (what the call will
// do as the tool declares it, its workdir, backend, risk, reasons, preview, and the call's
// own arguments) and the other pending questions of the same session.
type Approval struct {
	pending.Record
	// Batch lists the other approvals still pending in the same session, oldest first:
	// the rest of what the agent asked for at once.
	Batch []string `json:"batch,omitempty"`
}

// Decision is the body of POST /v1/approvals/{id}.
type Decision struct {
	// Decision is approve or deny.
	Decision string `json:"decision"`
	// Scope of an approval: once (this call) or session (what the record's
	// session_covers says, for the rest of the session). Empty means once.
	Scope string `json:"scope,omitempty"`
	// Message goes back to the model with a denial.
	Message string `json:"message,omitempty"`
}

// owns says whether the caller opened the session.
func (s *Server) owns(caller, sessionID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.sessions[sessionID]
	return ok && e.owner == caller
}

func (s *Server) store(w http.ResponseWriter) *pending.Store {
	st := s.opts.Engine.Approvals()
	if st == nil {
		writeError(w, http.StatusNotFound, CodeApprovalsOff, "this server's runtime keeps no approvals store: nothing here waits for a person")
	}
	return st
}

// visible returns the caller's approvals matching the filter, oldest first.
func (s *Server) visible(st *pending.Store, caller string, f approvalFilter) ([]Approval, error) {
	recs, err := st.List(false)
	if err != nil {
		return nil, err
	}
	out := []Approval{}
	for _, r := range recs {
		if !s.owns(caller, r.SessionID) || !f.match(r) {
			continue
		}
		out = append(out, Approval{Record: r})
	}
	for i := range out {
		out[i].Batch = batchOf(recs, out[i].Record)
	}
	return out, nil
}

// batchOf is the other pending approvals of r's session.
func batchOf(recs []pending.Record, r pending.Record) []string {
	var ids []string
	for _, o := range recs {
		if o.ID != r.ID && o.SessionID == r.SessionID && o.State == pending.Pending {
			ids = append(ids, o.ID)
		}
	}
	return ids
}

type approvalFilter struct{ session, tool, status string }

func (f approvalFilter) match(r pending.Record) bool {
	return (f.session == "" || r.SessionID == f.session) && (f.tool == "" || r.Tool == f.tool) &&
		(f.status == "" || f.status == "all" || string(r.State) == f.status)
}

var approvalStates = []string{"", "all", string(pending.Pending), string(pending.Approved), string(pending.Denied), string(pending.Expired)}

// listApprovals is GET /v1/approvals?session=&tool=&status=&follow=1. status defaults to
// pending; all lists every state.
func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	st := s.store(w)
	if st == nil {
		return
	}
	q := r.URL.Query()
	f := approvalFilter{session: q.Get("session"), tool: q.Get("tool"), status: q.Get("status")}
	if f.status == "" {
		f.status = string(pending.Pending)
	}
	if !contains(approvalStates, f.status) {
		writeError(w, http.StatusBadRequest, CodeInvalidDecision, fmt.Sprintf("status: expected one of pending, approved, denied, expired, all; got %q", f.status))
		return
	}
	if isFollow(r) {
		s.followApprovals(w, r, st, f)
		return
	}
	list, err := s.visible(st, Caller(r.Context()), f)
	if err != nil {
		writeError(w, http.StatusInternalServerError, CodeInternal, "approvals: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": list})
}

// followApprovals streams, as server-sent events, every visible approval that matches
// (the current ones first), then each one that appears or changes state: event
// "approval" with the approval.
func (s *Server) followApprovals(w http.ResponseWriter, r *http.Request, st *pending.Store, f approvalFilter) {
	ev := startEvents(w)
	caller := Caller(r.Context())
	f.status = "all" // a decision is news too
	seen := map[string]pending.State{}
	t := time.NewTicker(followPoll)
	defer t.Stop()
	lastSent := time.Now()
	for {
		list, err := s.visible(st, caller, f)
		if err != nil {
			ev.send("error", errorBody(CodeInternal, "approvals: "+err.Error()))
			return
		}
		for _, a := range list {
			if prev, ok := seen[a.ID]; ok && prev == a.State {
				continue
			}
			_, known := seen[a.ID]
			seen[a.ID] = a.State
			if !known && a.State != pending.Pending && !a.CreatedAt.After(time.Now().Add(-time.Minute)) {
				continue // old news: only what is pending, or was decided lately
			}
			ev.send("approval", a)
			lastSent = time.Now()
		}
		if time.Since(lastSent) > keepaliveEvery {
			ev.comment("keepalive")
			lastSent = time.Now()
		}
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
		if s.draining.Load() {
			return // a stream never ends by itself: it would hold shutdown for its whole grace
		}
	}
}

// getApproval is GET /v1/approvals/{id}.
func (s *Server) getApproval(w http.ResponseWriter, r *http.Request) {
	st := s.store(w)
	if st == nil {
		return
	}
	rec, ok := s.ownApproval(w, r, st)
	if !ok {
		return
	}
	all, _ := st.List(true)
	writeJSON(w, http.StatusOK, Approval{Record: rec, Batch: batchOf(all, rec)})
}

// ownApproval reads the approval named in the path if the caller may see it; else it
// answers 404.
func (s *Server) ownApproval(w http.ResponseWriter, r *http.Request, st *pending.Store) (pending.Record, bool) {
	id := r.PathValue("id")
	rec, err := st.Get(id)
	if err != nil || !s.owns(Caller(r.Context()), rec.SessionID) {
		writeError(w, http.StatusNotFound, CodeApprovalNotFound,
			fmt.Sprintf("no approval %q for this token (never asked, swept, or another token's session)", id))
		return pending.Record{}, false
	}
	return rec, true
}

// decideApproval is POST /v1/approvals/{id}: a person's answer. It is final; the
// decision is recorded as given by "http:" and the token's name, which the call's receipt
// then names as who decided.
func (s *Server) decideApproval(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(w, r) {
		return
	}
	st := s.store(w)
	if st == nil {
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var d Decision
	if err := decodeStrict(body, &d); err != nil {
		writeDecodeError(w, err)
		return
	}
	if err := d.check(); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidDecision, err.Error())
		return
	}
	if _, ok := s.ownApproval(w, r, st); !ok {
		return
	}
	scope := pending.Scope(d.Scope)
	rec, err := st.Decide(r.PathValue("id"), d.Decision == "approve", scope, "http:"+Caller(r.Context()), d.Message)
	switch {
	case errors.Is(err, pending.ErrDecided):
		writeError(w, http.StatusConflict, CodeApprovalDecided, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, CodeInternal, "approvals: "+err.Error())
		return
	}
	s.log.Info("approval decided", "approval_id", rec.ID, "state", string(rec.State), "caller", Caller(r.Context()))
	writeJSON(w, http.StatusOK, Approval{Record: rec})
}

func (d Decision) check() error {
	switch {
	case d.Decision != "approve" && d.Decision != "deny":
		return fmt.Errorf("decision: expected approve or deny, got %q", d.Decision)
	case d.Scope != "" && d.Scope != string(pending.Once) && d.Scope != string(pending.Session):
		return fmt.Errorf("scope: expected once or session, got %q", d.Scope)
	case d.Decision == "deny" && d.Scope != "":
		return errors.New("scope: only an approval has a scope")
	case d.Decision == "approve" && d.Message != "":
		return errors.New("message: only a denial carries a message to the model")
	case len(d.Message) > 4096:
		return errors.New("message: longer than 4096 bytes")
	}
	return nil
}

// sameOrigin refuses a state-changing request a browser sent from another site. The
// bearer token already keeps other sites out (a browser attaches no Authorization header
// of its own), so this is a second wall: should a token ever reach a cookie or a cached
// credential, a page elsewhere still cannot answer an approval.
func sameOrigin(w http.ResponseWriter, r *http.Request) bool {
	site := r.Header.Get("Sec-Fetch-Site")
	origin := r.Header.Get("Origin")
	bad := ""
	switch {
	case site != "" && site != "same-origin" && site != "none":
		bad = "Sec-Fetch-Site: " + site
	case origin != "" && !originIsHost(origin, r.Host):
		bad = "Origin " + origin
	}
	if bad != "" {
		writeError(w, http.StatusForbidden, CodeCrossSite,
			fmt.Sprintf("refused a cross-site request (%s): approvals are answered from this server's own page or a client that is not a browser", bad))
		return false
	}
	return true
}

func originIsHost(origin, host string) bool {
	rest, ok := strings.CutPrefix(origin, "http://")
	if !ok {
		rest, ok = strings.CutPrefix(origin, "https://")
	}
	return ok && rest == host
}

func isFollow(r *http.Request) bool {
	v := r.URL.Query().Get("follow")
	return v == "1" || v == "true"
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func errorBody(code, msg string) ErrorBody {
	var b ErrorBody
	b.Error.Code, b.Error.Message = code, msg
	return b
}

// startEvents answers with an event stream.
func startEvents(w http.ResponseWriter) *events {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	ev := &events{w: w, rc: http.NewResponseController(w)}
	ev.comment("stream")
	return ev
}
