package urlguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// rebindingDNS is a DNS server on 127.0.0.1 that the test controls: the
// first A query for its name gets a public-looking answer, every later one
// gets 127.0.0.1. Nothing it answers is ever dialled except loopback (see
// loopbackOnly).
type rebindingDNS struct {
	conn    net.PacketConn
	aCount  atomic.Int32
	first   netip.Addr
	then    netip.Addr
	stopped sync.WaitGroup
}

func startRebindingDNS(t *testing.T, first, then string) *rebindingDNS {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rebindingDNS{conn: pc, first: netip.MustParseAddr(first), then: netip.MustParseAddr(then)}
	s.stopped.Add(1)
	go s.serve()
	t.Cleanup(func() { pc.Close(); s.stopped.Wait() })
	return s
}

func (s *rebindingDNS) serve() {
	defer s.stopped.Done()
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil {
			continue
		}
		q, err := p.Question()
		if err != nil {
			continue
		}
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
		b.EnableCompression()
		_ = b.StartQuestions()
		_ = b.Question(q)
		_ = b.StartAnswers()
		if q.Type == dnsmessage.TypeA && q.Name.String() == "rebind.test." {
			a := s.then
			if s.aCount.Add(1) == 1 {
				a = s.first
			}
			_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}, dnsmessage.AResource{A: a.As4()})
		}
		msg, err := b.Finish()
		if err != nil {
			continue
		}
		_, _ = s.conn.WriteTo(msg, from)
	}
}

func (s *rebindingDNS) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", s.conn.LocalAddr().String())
	}}
}

// loopbackOnly wraps a Control so that a test can never connect anywhere but
// loopback, whatever the code under test decides: a non-loopback address
// that the guard let through fails the test and is refused before connect.
func loopbackOnly(t *testing.T, control func(string, string, syscall.RawConn) error) func(string, string, syscall.RawConn) error {
	return func(network, address string, c syscall.RawConn) error {
		if err := control(network, address, c); err != nil {
			return err
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !ap.Addr().Unmap().IsLoopback() {
			t.Errorf("the guard let a dial to %s through", address)
			return errors.New("test: non-loopback dial blocked by the test")
		}
		return nil
	}
}

func countingListener(t *testing.T) (net.Listener, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	return ln, &accepted
}

// TestRebindingRefusedAtConnect: the name passes the check with its first
// (public) answer; when the dialer resolves it again it gets 127.0.0.1, and
// Control refuses the socket before connect, so the listener on that port
// sees nothing.
func TestRebindingRefusedAtConnect(t *testing.T) {
	dns := startRebindingDNS(t, "93.184.215.14", "127.0.0.1")
	ln, accepted := countingListener(t)
	_, port, _ := net.SplitHostPort(ln.Addr().String())

	g, err := New(Config{Mode: ModeOpen}, WithResolver(dns.resolver()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d := g.CheckURL(ctx, "http://rebind.test:"+port+"/")
	if !d.Allowed {
		t.Fatalf("first check should see the public answer and allow: %s (%s)", d.Reason, d.Detail)
	}

	dialer := &net.Dialer{Resolver: dns.resolver(), Control: loopbackOnly(t, g.Control)}
	c, err := dialer.DialContext(ctx, "tcp4", "rebind.test:"+port)
	if err == nil {
		c.Close()
		t.Fatal("dial of the rebound name succeeded")
	}
	var de *DeniedError
	if !errors.As(err, &de) || de.Reason != Loopback {
		t.Fatalf("dial error = %v, want a loopback refusal", err)
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("listener accepted %d connections; the refusal must come before connect", n)
	}
	if dns.aCount.Load() < 2 {
		t.Fatalf("resolver saw %d A queries, want the check and the dial", dns.aCount.Load())
	}
}

// TestDialContextUsesCheckedAddresses: the guard's own DialContext resolves
// once, checks every answer and dials only those; a rebinding answer is
// refused before a socket exists.
func TestDialContextUsesCheckedAddresses(t *testing.T) {
	dns := startRebindingDNS(t, "127.0.0.1", "127.0.0.1")
	ln, accepted := countingListener(t)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	g, err := New(Config{Mode: ModeOpen}, WithResolver(dns.resolver()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.DialContext(ctx, "tcp", "rebind.test:"+port)
	var de *DeniedError
	if !errors.As(err, &de) || de.Reason != Loopback {
		t.Fatalf("DialContext error = %v, want a loopback refusal", err)
	}
	if _, err = g.DialContext(ctx, "tcp", "[::ffff:127.0.0.1]:"+port); !errors.As(err, &de) || de.Reason != Loopback {
		t.Fatalf("DialContext mapped loopback error = %v", err)
	}
	if accepted.Load() != 0 {
		t.Fatal("a refused dial reached the listener")
	}

	// With the test-only allowance the same dial connects: the refusals
	// above were the guard's, not a broken dialer.
	lg, err := New(Config{Mode: ModeOpen}, WithResolver(dns.resolver()), AllowLoopbackForTesting())
	if err != nil {
		t.Fatal(err)
	}
	c, err := lg.DialContext(ctx, "tcp", "rebind.test:"+port)
	if err != nil {
		t.Fatalf("allowed dial: %v", err)
	}
	c.Close()
}

func TestControlRefusesBlockedAddresses(t *testing.T) {
	t.Parallel()
	g := openGuard(t)
	for _, addr := range []string{"127.0.0.1:80", "[::1]:80", "169.254.169.254:80", "[::ffff:169.254.169.254]:80", "10.0.0.1:443", "0.0.0.0:22", "[fe80::1%eth0]:80"} {
		var de *DeniedError
		if err := g.Control("tcp", addr, nil); !errors.As(err, &de) {
			t.Errorf("Control(%s) = %v, want a refusal", addr, err)
		}
	}
	if err := g.Control("tcp", "93.184.215.14:443", nil); err != nil {
		t.Errorf("Control(public) = %v", err)
	}
	if err := g.Control("tcp", "garbage", nil); err == nil {
		t.Error("Control(garbage) = nil")
	}
}
