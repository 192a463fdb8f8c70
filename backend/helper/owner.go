package helper

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/airlock-dev/airlock/backend"
)

// The egress proxy, reached through a port the SSH server forwards back, sees a connection
// from the remote host's loopback and its source port: only the helper, which started the
// commands there, can tell which of them holds that socket (package sockowner, run on the
// helper's side). The host asks with an owner frame; the helper answers with the request ID
// of the command whose process tree holds the socket, and the client turns it into the call
// that command runs for.

// ownerMsg asks which running command holds the TCP socket from Client to Server, as the
// command sees the connection.
type ownerMsg struct {
	Client string `json:"client"`
	Server string `json:"server"`
}

// ownerDoneMsg answers it: the request ID of that command, or why none can be named.
type ownerDoneMsg struct {
	Request uint32 `json:"request,omitempty"`
	Error   string `json:"error,omitempty"`
}

// handleOwner answers an owner frame aside, so that the lookup never stalls the stream.
func (s *server) handleOwner(f frame) {
	if !s.track() {
		return
	}
	go func() {
		defer s.wg.Done()
		var m ownerMsg
		var ans ownerDoneMsg
		if err := json.Unmarshal(f.payload, &m); err != nil {
			ans.Error = "decode owner: " + err.Error()
		} else if client, err := netip.ParseAddrPort(m.Client); err != nil {
			ans.Error = "client address: " + err.Error()
		} else if server, err := netip.ParseAddrPort(m.Server); err != nil {
			ans.Error = "server address: " + err.Error()
		} else if tag, err := s.owners.Owner(client, server); err != nil {
			ans.Error = err.Error()
		} else if id, err := strconv.ParseUint(tag, 10, 32); err != nil {
			ans.Error = "bad tag " + tag
		} else {
			ans.Request = uint32(id)
		}
		_ = s.send(frameOwnerDone, f.id, mustJSON(ans))
	}()
}

// Owner names the call whose command, started through this helper, holds the client end of
// the TCP connection from client to server on the helper's host (see [backend.ConnOwner]).
// The call is the one in the context the command's Exec was given ([backend.WithCall]); an
// error says why none can be named.
func (c *Client) Owner(ctx context.Context, client, server netip.AddrPort) (string, error) {
	if err := c.Ready(ctx); err != nil {
		return "", err
	}
	cl := &call{ownerDone: make(chan ownerDoneMsg, 1), finished: make(chan struct{})}
	id, release := c.register(cl)
	defer release()
	if err := c.send(frameOwner, id, mustJSON(ownerMsg{Client: client.String(), Server: server.String()})); err != nil {
		c.fail(fmt.Errorf("send: %w", err))
		return "", fmt.Errorf("%w: helper: send owner: %w", backend.ErrUnavailable, err)
	}
	select {
	case ans := <-cl.ownerDone:
		if ans.Error != "" {
			return "", fmt.Errorf("helper: %s", ans.Error)
		}
		c.mu.Lock()
		owner := c.pending[ans.Request]
		c.mu.Unlock()
		if owner == nil {
			return "", fmt.Errorf("the command (request %d) has ended", ans.Request)
		}
		if owner.callID == "" {
			return "", fmt.Errorf("the command (request %d) runs for no call", ans.Request)
		}
		return owner.callID, nil
	case <-ctx.Done():
		return "", fmt.Errorf("helper: owner: %w", ctx.Err())
	case <-c.done:
		return "", fmt.Errorf("%w: helper: %w", backend.ErrUnavailable, c.Err())
	}
}

// ownerFrame takes the answer to an owner request.
func (cl *call) ownerFrame(f frame) error {
	if cl.ownerDone == nil {
		return fmt.Errorf("%w: owner answer for request %d, which asked none", ErrMalformedFrame, f.id)
	}
	var m ownerDoneMsg
	if err := json.Unmarshal(f.payload, &m); err != nil {
		return fmt.Errorf("%w: owner answer: %w", ErrMalformedFrame, err)
	}
	select {
	case cl.ownerDone <- m:
		return nil
	default:
		return fmt.Errorf("%w: second owner answer for request %d", ErrMalformedFrame, f.id)
	}
}
