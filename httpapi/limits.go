package httpapi

import (
	"fmt"
	"net/http"
	"sync"
)

// tokenLimit bounds the requests that run calls which one token has in flight at once
// ([serve] max_calls_per_token): one agent that floods the server gets 429 and comes back,
// instead of queueing unseen behind every other token's work. A POST of an array or a
// message counts once, as do a resource request (jobs, files) and a stream.
type tokenLimit struct {
	max     int
	mu      sync.Mutex
	running map[string]int
}

func newTokenLimit(max int) *tokenLimit {
	if max <= 0 {
		max = 32
	}
	return &tokenLimit{max: max, running: map[string]int{}}
}

// acquire takes a slot for caller, or reports false when it has max running.
func (l *tokenLimit) acquire(caller string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running[caller] >= l.max {
		return false
	}
	l.running[caller]++
	return true
}

func (l *tokenLimit) release(caller string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running[caller]--; l.running[caller] <= 0 {
		delete(l.running, caller)
	}
}

// limited wraps a handler that runs calls: over the caller's limit it answers 429
// too_many_calls with Retry-After, and runs nothing.
func (s *Server) limited(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		caller := Caller(r.Context())
		if !s.limit.acquire(caller) {
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusTooManyRequests, CodeTooManyCalls, fmt.Sprintf(
				"this token already has %d requests running calls, its limit ([serve] max_calls_per_token); retry when one has finished", s.limit.max))
			return
		}
		defer s.limit.release(caller)
		h(w, r)
	}
}
