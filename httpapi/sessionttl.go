package httpapi

import (
	"fmt"
	"net/http"
	"time"
)

// patchSession is PATCH /v1/sessions/{id} with {"idle_ttl_seconds": N}: the session's own
// idle TTL, at most [serve] max_session_ttl, counted from now. The answer is the session,
// with its new expiry.
func (s *Server) patchSession(w http.ResponseWriter, r *http.Request) {
	e, ok := s.session(w, r)
	if !ok {
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var req struct {
		IdleTTLSeconds *float64 `json:"idle_ttl_seconds"`
	}
	if err := decodeStrict(body, &req); err != nil {
		writeDecodeError(w, err)
		return
	}
	max := s.opts.Engine.Config().Serve.MaxSessionTTL.D()
	switch {
	case req.IdleTTLSeconds == nil:
		writeError(w, http.StatusBadRequest, CodeInvalidTTL, "idle_ttl_seconds: required, the seconds of idle time after which the session closes")
		return
	case *req.IdleTTLSeconds <= 0 || *req.IdleTTLSeconds > max.Seconds():
		writeError(w, http.StatusBadRequest, CodeInvalidTTL, fmt.Sprintf(
			"idle_ttl_seconds: %g is not above 0 and at most %g ([serve] max_session_ttl)", *req.IdleTTLSeconds, max.Seconds()))
		return
	}
	d := time.Duration(*req.IdleTTLSeconds * float64(time.Second))
	if !e.sess.SetIdleTTL(d) {
		writeError(w, http.StatusConflict, CodeInvalidTTL, "sessions on this server do not expire ([session] idle_ttl is 0): there is nothing to extend")
		return
	}
	e.touch()
	writeJSON(w, http.StatusOK, s.info(e))
}
