package urlguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// Control is a [net.Dialer] Control function: it runs after the socket is
// made and before connect(2), with the IP actually being dialled, and
// refuses a blocked one. A name that resolved to a public address when it was
// checked and to loopback when it is dialled (DNS rebinding) is refused here,
// before any packet is sent.
func (g *Guard) Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &DeniedError{Reason: InvalidHost, Detail: "dial address " + address}
	}
	if r := g.CheckAddr(ap.Addr()); r != Allowed {
		return &DeniedError{Reason: r, Host: ap.Addr().String(), Port: int(ap.Port()), Addr: ap.Addr(), Detail: "at connect time"}
	}
	return nil
}

// Dialer returns a net.Dialer whose Control is [Guard.Control].
func (g *Guard) Dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Control: g.Control}
}

// DialContext dials addr (host:port) after checking it: the host goes through
// every rule of [Guard.CheckHost], the connection is made to the addresses
// that were checked (not to a second lookup), and [Guard.Control] checks each
// again at connect time. It has the signature of http.Transport.DialContext.
func (g *Guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &DeniedError{Reason: InvalidHost, Detail: err.Error()}
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return nil, &DeniedError{Reason: InvalidPort, Host: host, Detail: "port " + portStr}
	}
	d := g.CheckHost(ctx, host, port)
	if !d.Allowed {
		return nil, d.Err()
	}
	return g.dialAddrs(ctx, network, d.Addrs, port)
}

// DialAddrs connects to the first of addrs that answers, checking each at
// connect time. Callers that have a [Decision] pass its Addrs.
func (g *Guard) dialAddrs(ctx context.Context, network string, addrs []netip.Addr, port int) (net.Conn, error) {
	dialer := g.Dialer(0)
	var errs []error
	for _, a := range addrs {
		if network == "tcp4" && !a.Unmap().Is4() || network == "tcp6" && !a.Is6() {
			continue
		}
		c, err := dialer.DialContext(ctx, network, netip.AddrPortFrom(a.Unmap(), uint16(port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("urlguard: no %s address to dial", network)
	}
	return nil, errors.Join(errs...)
}
