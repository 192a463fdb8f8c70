package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
)

// sessionTokens are tokens minted for one session (POST /v1/sessions with
// "session_token": true), to hand to the one agent process that works in it. Such a token
// acts as its owner's token on that session's routes and nowhere else: every other path
// (other sessions, the list, new sessions, /mcp, /metrics, approvals, receipts) is refused
// by default, so a route added later is closed to it until it is meant to be open. It dies
// with the session.
type sessionTokens struct {
	mu     sync.Mutex
	byHash map[[sha256.Size]byte]scopedToken
}

type scopedToken struct {
	owner     string
	sessionID string
}

func newSessionTokens() *sessionTokens {
	return &sessionTokens{byHash: map[[sha256.Size]byte]scopedToken{}}
}

// mint makes a token for the session, owned by owner, and forgets it when the session ends.
func (t *sessionTokens) mint(e *entry) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	tok := "alks_" + base64.RawURLEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(tok))
	t.mu.Lock()
	t.byHash[sum] = scopedToken{owner: e.owner, sessionID: e.sess.ID()}
	t.mu.Unlock()
	e.sess.OnClose(func() {
		t.mu.Lock()
		delete(t.byHash, sum)
		t.mu.Unlock()
	})
	return tok, nil
}

func (t *sessionTokens) lookup(tok string) (scopedToken, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st, ok := t.byHash[sha256.Sum256([]byte(tok))]
	return st, ok
}

type scopeKey struct{}

// scopeOf is the session a request's token is limited to; "" for a server token.
func scopeOf(ctx context.Context) string {
	id, _ := ctx.Value(scopeKey{}).(string)
	return id
}

// inScope reports whether a session token for sessionID may use path.
func inScope(sessionID, path string) bool {
	if path == "/v1/openapi.json" {
		return true
	}
	base := "/v1/sessions/" + sessionID
	return path == base || strings.HasPrefix(path, base+"/")
}

// scoped authenticates a session token: its owner's name in the context, its session as
// the request's scope, and a refusal for any path outside that session.
func (s *Server) scoped(w http.ResponseWriter, r *http.Request, tok string) (*http.Request, bool) {
	st, ok := s.sessionTokens.lookup(tok)
	if !ok {
		return nil, false
	}
	if !inScope(st.sessionID, r.URL.Path) {
		writeError(w, http.StatusForbidden, CodeTokenScope,
			"this token is for session "+st.sessionID+" only: it may use /v1/sessions/"+st.sessionID+" and what lies under it")
		return nil, true
	}
	ctx := context.WithValue(r.Context(), callerKey{}, st.owner)
	ctx = context.WithValue(ctx, scopeKey{}, st.sessionID)
	return r.WithContext(ctx), true
}
