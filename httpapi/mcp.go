package httpapi

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpSlot carries, through the SDK, the session that a request without an Mcp-Session-Id
// opened, so that the handler can tie the two together once the SDK has answered.
type mcpSlot struct {
	e   *entry
	srv *mcp.Server
}

type slotKey struct{}

// mcpHandler serves MCP over streamable HTTP, stateful so that the server can ask the
// client (elicitation). Each MCP session is a runtime session of its own, opened for the
// token that initialised it: the SDK refuses its Mcp-Session-Id to any other token, and
// the runtime session ends when the MCP session does.
func (s *Server) mcpHandler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(s.newMCPSession, &mcp.StreamableHTTPOptions{MaxRequestBodyBytes: s.opts.MaxBodyBytes})
	// The token was checked already; this gives the SDK the caller as the session's user,
	// which it compares on every later request of the session.
	withUser := auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: Caller(ctx)}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			withUser.ServeHTTP(w, r)
			return
		}
		if s.draining.Load() {
			writeError(w, http.StatusServiceUnavailable, CodeShuttingDown, "the server is shutting down; no new sessions are opened")
			return
		}
		slot := &mcpSlot{}
		withUser.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), slotKey{}, slot)))
		s.adoptMCP(slot)
	})
}

// newMCPSession is the SDK's getServer: a new runtime session and an MCP server over it.
func (s *Server) newMCPSession(r *http.Request) *mcp.Server {
	slot, _ := r.Context().Value(slotKey{}).(*mcpSlot)
	if slot == nil {
		return nil
	}
	if slot.srv != nil {
		// The SDK asks more than once per request (for the protocol versions, then to
		// connect): one request opens one session.
		return slot.srv
	}
	caller := Caller(r.Context())
	e, err := s.open(r.Context(), caller, KindMCP)
	if err != nil {
		s.log.Error("session open failed", "error", err)
		return nil
	}
	srv, err := s.opts.MCPServer(r.Context(), &callerSession{Session: e.sess, caller: caller, s: s, e: e})
	if err != nil {
		s.log.Error("mcp server failed", "error", err)
		_ = e.sess.Close(context.WithoutCancel(r.Context()))
		return nil
	}
	slot.e, slot.srv = e, srv
	return srv
}

// adoptMCP ties the runtime session to the MCP session the SDK made, or closes it when
// initialisation failed and no MCP session exists.
func (s *Server) adoptMCP(slot *mcpSlot) {
	if slot.e == nil {
		return
	}
	var ss *mcp.ServerSession
	for x := range slot.srv.Sessions() {
		ss = x
	}
	if ss == nil || ss.InitializeParams() == nil {
		// Not an initialize that succeeded (a client probing for a newer protocol first
		// sends a request of that kind): the SDK closed its side; close ours.
		if ss != nil {
			_ = ss.Close()
		}
		_ = slot.e.sess.Close(context.Background())
		return
	}
	slot.e.mu.Lock()
	slot.e.mcp = ss
	slot.e.mu.Unlock()
	go func() {
		_ = ss.Wait()
		if err := slot.e.sess.Close(context.Background()); err != nil {
			s.log.Warn("session close failed", "session_id", slot.e.sess.ID(), "error", err)
		}
		s.log.Info("mcp session ended", "session_id", slot.e.sess.ID())
	}()
}
