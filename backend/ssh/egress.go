package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/backend"
)

// The egress proxy on the remote host ([network] mode "allowlist"): a port the remote sshd
// forwards back over the kept connection, and, in session mode, one more per call.

// forwardProxy asks the remote sshd for a listener on its 127.0.0.1 (a reverse port
// forward on this connection) and has the egress proxy answer every connection made to it,
// naming the call behind each refused request by asking the resident helper which of its
// commands holds the connection's other end (see [link.owner]). It ends with the link:
// sshd closes the port when the connection goes. Without the proxy's Serve (an older
// runtime), each connection is relayed to the proxy's own port instead.
func (e *Env) forwardProxy(l *link) error {
	target := strings.TrimPrefix(e.egress.URL, "http://")
	ln, err := l.client.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("ssh: [network] mode = \"allowlist\" needs a reverse-forwarded port on %s for the egress proxy (sshd's AllowTcpForwarding must allow remote forwarding): %w", e.cfg.target(), err)
	}
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok || addr.Port == 0 {
		_ = ln.Close()
		return fmt.Errorf("ssh: %s gave the egress proxy forward no port (%v)", e.cfg.target(), ln.Addr())
	}
	l.proxy, l.proxyPort = ln, addr.Port
	e.log.Debug("egress proxy forwarded", "remote", addr.String(), "proxy", target)
	if e.egress.Serve != nil {
		// The listener is closed in link.kill, which ends the proxy's serving of it.
		e.egress.Serve(ln, l.owner)
		return nil
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go relay(c, target)
		}
	}()
	return nil
}

// owner names the call behind a connection to the shared forwarded port: the forward
// carries the remote client's address and port, and the helper, which started the commands
// on that host, finds which of them holds that socket. In session mode there is no one on
// the remote host to ask: each call's commands get a forwarded port of their own instead
// ([Env.callProxy]), and a connection to the shared one is the session's.
func (l *link) owner(client, server netip.AddrPort) (string, error) {
	h := l.owning.Load()
	if h == nil {
		return "", errors.New("session mode: no resident helper on the remote host to tell which command holds the connection, and the command did not use its call's own forwarded port")
	}
	ctx, cancel := context.WithTimeout(context.Background(), ownerTimeout)
	defer cancel()
	return h.client.Owner(ctx, client, server)
}

// ownerTimeout bounds the question to the helper; the proxy answers the refusal after it.
const ownerTimeout = 5 * time.Second

// callProxy gives one call's commands, in session mode, a forwarded port of their own on the
// remote host, served by the egress proxy as that call's: a refusal there names the call.
// It returns the proxy variables for the command (the shared port's when the call has no
// ID, the link no forward, or the remote sshd refuses another one) and what ends the port.
func (e *Env) callProxy(ctx context.Context, l *link) ([]string, func()) {
	id := backend.CallFrom(ctx)
	if l.proxy == nil || id == "" || e.egress.Serve == nil {
		return l.proxyEnv(), func() {}
	}
	ln, err := l.client.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.log.Warn("no forwarded port for the call; its refusals are the session's", "call_id", id, "error", err)
		return l.proxyEnv(), func() {}
	}
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok || addr.Port == 0 {
		_ = ln.Close()
		return l.proxyEnv(), func() {}
	}
	release := e.egress.Serve(ln, func(netip.AddrPort, netip.AddrPort) (string, error) { return id, nil })
	return proxyVars(addr.Port), func() { release(); _ = ln.Close() }
}

// relay copies one forwarded connection to the egress proxy and back.
func relay(remote net.Conn, target string) {
	defer remote.Close()
	local, err := net.DialTimeout("tcp", target, 10*time.Second)
	if err != nil {
		return
	}
	defer local.Close()
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(local, remote)
		if tc, ok := local.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(remote, local)
		_ = remote.Close()
		done <- struct{}{}
	}()
	<-done
	<-done
}

// proxyEnv is the proxy variables for commands on this link (nil without a forward).
func (l *link) proxyEnv() []string {
	if l.proxy == nil {
		return nil
	}
	return proxyVars(l.proxyPort)
}

// proxyVars point clients at a proxy on the remote host's loopback port.
func proxyVars(port int) []string {
	u := "http://127.0.0.1:" + strconv.Itoa(port)
	return []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u, "NO_PROXY=", "no_proxy="}
}
