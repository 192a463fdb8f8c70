package httpapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/toolcall"
)

// MessageAnswer answers an OpenAI assistant message: the tool messages to append, in the
// order of its tool_calls, and the results they were made from.
type MessageAnswer struct {
	Messages []toolcall.ToolMessage `json:"messages"`
	Results  []pipeline.Result      `json:"results"`
}

// postCalls is POST /v1/sessions/{id}/calls: one call, an array, or an assistant message,
// answered in the same shape. Every call gets a result and a receipt, whatever its status:
// a denied call is a 200 with status denied, not an HTTP error.
func (s *Server) postCalls(w http.ResponseWriter, r *http.Request) {
	e, ok := s.session(w, r)
	if !ok {
		return
	}
	if s.draining.Load() {
		writeError(w, http.StatusServiceUnavailable, CodeShuttingDown, "the server is shutting down; no new calls are taken")
		return
	}
	// Counted until the answer is written, so that shutdown closes no connection before
	// its call's result is on it.
	s.calls.add()
	defer s.calls.done()
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if key == "" && wantsEvents(r) {
		calls, _, err := toolcall.Parse(body, toolcall.Options{DisallowUnknownFields: true})
		if err != nil {
			status, out := marshalError(http.StatusBadRequest, parseCode(err), err.Error())
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write(out)
			return
		}
		s.streamCalls(w, r, e, calls)
		return
	}
	if key == "" {
		status, out := s.runCalls(r, e, body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(out)
		return
	}
	if len(key) > 255 {
		writeError(w, http.StatusBadRequest, CodeInvalidCalls, "Idempotency-Key: at most 255 characters")
		return
	}
	rec, first, err := s.idem.begin(Caller(r.Context())+"\x00"+e.sess.ID()+"\x00"+key, sha256.Sum256(body))
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, CodeIdempotencyKeyReused, err.Error())
		return
	}
	if first {
		// The calls outlive the connection: a client that lost it retries with the same key
		// and gets their real result rather than an interrupted one.
		status, out := s.runCalls(r.WithContext(context.WithoutCancel(r.Context())), e, body)
		rec.finish(status, out)
	} else {
		select {
		case <-rec.done:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rec.status)
	_, _ = w.Write(rec.body)
}

// runCalls parses and runs the calls of body on the session, and returns the answer.
func (s *Server) runCalls(r *http.Request, e *entry, body []byte) (int, []byte) {
	calls, form, err := toolcall.Parse(body, toolcall.Options{DisallowUnknownFields: true})
	if err != nil {
		return marshalError(http.StatusBadRequest, parseCode(err), err.Error())
	}
	cs := &callerSession{Session: e.sess, caller: Caller(r.Context()), s: s, e: e}
	results := cs.RunBatch(r.Context(), calls)
	var v any
	switch form {
	case toolcall.One:
		v = results[0]
	case toolcall.Array:
		v = results
	default:
		v = MessageAnswer{Messages: toolcall.Messages(results), Results: results}
	}
	return encodeJSON(http.StatusOK, v)
}

// parseCode is the envelope's code for a parse error: the same words as toolcall's.
func parseCode(err error) string {
	var te *toolcall.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return CodeInvalidCalls
}

func marshalError(status int, code, msg string) (int, []byte) {
	rec := recorder{}
	writeError(&rec, status, code, msg)
	return rec.status, rec.body
}

// recorder keeps an answer so that an idempotent repeat can be given the same bytes.
type recorder struct {
	h      http.Header
	status int
	body   []byte
}

func (r *recorder) Header() http.Header {
	if r.h == nil {
		r.h = http.Header{}
	}
	return r.h
}
func (r *recorder) WriteHeader(s int)           { r.status = s }
func (r *recorder) Write(b []byte) (int, error) { r.body = append(r.body, b...); return len(b), nil }

// idempotency keeps the answers of requests that carried an Idempotency-Key, for a day and
// at most maxIdempotent of them, in memory: a repeat within that time gets the stored
// answer; a repeat while the first still runs waits for it. A restart forgets them.
type idempotency struct {
	mu   sync.Mutex
	recs map[string]*idemRecord
}

const (
	idempotencyTTL = 24 * time.Hour
	maxIdempotent  = 10000
)

type idemRecord struct {
	sum     [sha256.Size]byte
	created time.Time
	done    chan struct{}
	status  int
	body    []byte
}

func newIdempotency() *idempotency { return &idempotency{recs: map[string]*idemRecord{}} }

// begin returns the record of key; first says the caller runs the request and must
// finish it. The same key with another body is an error.
func (i *idempotency) begin(key string, sum [sha256.Size]byte) (*idemRecord, bool, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	now := time.Now()
	if rec, ok := i.recs[key]; ok && now.Sub(rec.created) < idempotencyTTL {
		if rec.sum != sum {
			return nil, false, fmt.Errorf("Idempotency-Key was used with another body on this session; use a new key for a new request")
		}
		return rec, false, nil
	}
	if len(i.recs) >= maxIdempotent {
		i.evict(now)
	}
	rec := &idemRecord{sum: sum, created: now, done: make(chan struct{})}
	i.recs[key] = rec
	return rec, true, nil
}

// evict drops expired records, and the oldest finished one when none expired.
func (i *idempotency) evict(now time.Time) {
	var oldest string
	for k, r := range i.recs {
		select {
		case <-r.done:
		default:
			continue // running: its waiters need it
		}
		if now.Sub(r.created) >= idempotencyTTL {
			delete(i.recs, k)
			continue
		}
		if oldest == "" || r.created.Before(i.recs[oldest].created) {
			oldest = k
		}
	}
	if len(i.recs) >= maxIdempotent && oldest != "" {
		delete(i.recs, oldest)
	}
}

func (r *idemRecord) finish(status int, body []byte) {
	r.status, r.body = status, body
	close(r.done)
}
