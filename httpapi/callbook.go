package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/pipeline"
)

// callBook remembers the calls of the server's sessions, running and finished, so that a
// client can poll a call by id (GET …/calls/{call_id}) or cancel it (DELETE). A finished
// call is kept until its session closes, at most maxKeptCalls of them across the server
// (the oldest finished go first). Cancelling cancels the context the call runs on: the
// pipeline then kills the command's process tree and writes the receipt (cancelled).
type callBook struct {
	mu    sync.Mutex
	calls map[string]*callState // by session id + "\x00" + call id
	order []string              // keys, oldest first
}

const maxKeptCalls = 10000

// callState is one call as GET …/calls/{call_id} shows it.
type callState struct {
	CallID    string           `json:"call_id"`
	Tool      string           `json:"tool_name"`
	State     string           `json:"state"` // running | finished
	StartedAt time.Time        `json:"started_at"`
	Result    *pipeline.Result `json:"result,omitempty"`

	// batch cancels the call's batch: a call sent alone is cancelled alone; the calls of
	// an array or message share one context, so cancelling one cancels the rest still running.
	batch context.CancelFunc
	done  chan struct{}
}

func newCallBook() *callBook { return &callBook{calls: map[string]*callState{}} }

func callKey(sessionID, callID string) string { return sessionID + "\x00" + callID }

// begin records calls (whose IDs are set) as running under cancel.
func (b *callBook) begin(sessionID string, calls []pipeline.Call, cancel context.CancelFunc) []*callState {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now().UTC()
	out := make([]*callState, len(calls))
	for i, c := range calls {
		st := &callState{CallID: c.ID, Tool: c.Name, State: "running", StartedAt: now, batch: cancel, done: make(chan struct{})}
		k := callKey(sessionID, c.ID)
		if _, ok := b.calls[k]; !ok {
			b.order = append(b.order, k)
		}
		b.calls[k] = st
		out[i] = st
	}
	b.evict()
	return out
}

// finish records the results of calls begun together.
func (b *callBook) finish(states []*callState, results []pipeline.Result) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, st := range states {
		r := results[i]
		st.State, st.Result = "finished", &r
		close(st.done)
	}
}

func (b *callBook) get(sessionID, callID string) (*callState, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st, ok := b.calls[callKey(sessionID, callID)]
	return st, ok
}

// snapshot copies st under the book's lock.
func (b *callBook) snapshot(st *callState) callState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return *st
}

// forget drops a closed session's calls.
func (b *callBook) forget(sessionID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	kept := b.order[:0]
	for _, k := range b.order {
		if len(k) > len(sessionID) && k[:len(sessionID)+1] == sessionID+"\x00" {
			delete(b.calls, k)
			continue
		}
		kept = append(kept, k)
	}
	b.order = kept
}

// evict drops the oldest finished calls past maxKeptCalls; running ones stay.
func (b *callBook) evict() {
	for i := 0; len(b.calls) > maxKeptCalls && i < len(b.order); {
		k := b.order[i]
		if st := b.calls[k]; st != nil && st.State == "running" {
			i++
			continue
		}
		delete(b.calls, k)
		if i == 0 {
			// The oldest goes: no copy of the whole order per call (append reallocates
			// the array, without what was cut, once it is full).
			b.order = b.order[1:]
			continue
		}
		b.order = append(b.order[:i], b.order[i+1:]...)
	}
}

// getCall is GET /v1/sessions/{id}/calls/{call_id}: the call's state, and its result once
// finished.
func (s *Server) getCall(w http.ResponseWriter, r *http.Request) {
	e, ok := s.session(w, r)
	if !ok {
		return
	}
	st, ok := s.book.get(e.sess.ID(), r.PathValue("call_id"))
	if !ok {
		callNotFound(w, r)
		return
	}
	writeJSON(w, http.StatusOK, s.book.snapshot(st))
}

// cancelCall is DELETE /v1/sessions/{id}/calls/{call_id}: cancel a running call, wait for
// its result (the receipt says cancelled; its process tree is gone) and answer it.
func (s *Server) cancelCall(w http.ResponseWriter, r *http.Request) {
	e, ok := s.session(w, r)
	if !ok {
		return
	}
	st, ok := s.book.get(e.sess.ID(), r.PathValue("call_id"))
	if !ok {
		callNotFound(w, r)
		return
	}
	select {
	case <-st.done:
		writeError(w, http.StatusConflict, CodeCallFinished,
			fmt.Sprintf("call %q has already finished; GET it for its result", st.CallID))
		return
	default:
	}
	st.batch()
	select {
	case <-st.done:
	case <-r.Context().Done():
		return
	}
	writeJSON(w, http.StatusOK, s.book.snapshot(st))
}

func callNotFound(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotFound, CodeCallNotFound,
		fmt.Sprintf("no call %q in this session (never sent here, or forgotten: at most %d are kept)", r.PathValue("call_id"), maxKeptCalls))
}
