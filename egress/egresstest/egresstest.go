// Package egresstest holds what the backends' egress tests share: a resolver the test
// controls, a named HTTP server on loopback, and an allowlist proxy on loopback that records
// what it refuses. Nothing here touches any address but 127.0.0.1.
package egresstest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/urlguard"
)

// Names is a resolver the test controls: each name answers with one address.
type Names map[string]string

// LookupNetIP implements urlguard's resolver.
func (n Names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := n[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, fmt.Errorf("no such host %s", host)
}

// Server starts an HTTP server on 127.0.0.1 that answers every request with name, stopped
// when the test ends, and returns its port.
func Server(t testing.TB, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, name) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// Denials records a proxy's refusals. It is safe for concurrent use.
type Denials struct {
	mu   sync.Mutex
	list []egress.Denial
}

// Add records one refusal; give it to egress.WithOnDenied.
func (d *Denials) Add(x egress.Denial) {
	d.mu.Lock()
	d.list = append(d.list, x)
	d.mu.Unlock()
}

// List returns the refusals so far, in order.
func (d *Denials) List() []egress.Denial {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]egress.Denial(nil), d.list...)
}

// ByHost returns the last refusal of each host asked for.
func (d *Denials) ByHost() map[string]egress.Denial {
	out := map[string]egress.Denial{}
	for _, x := range d.List() {
		out[x.Host] = x
	}
	return out
}

// Proxy is an allowlist proxy serving on 127.0.0.1, closed when the test ends.
type Proxy struct {
	*egress.Proxy
	Listener net.Listener
	Denials  *Denials
}

// Port is the proxy's port on 127.0.0.1.
func (p *Proxy) Port() uint16 { return uint16(p.Listener.Addr().(*net.TCPAddr).Port) }

// URL is the proxy as HTTP_PROXY names it.
func (p *Proxy) URL() string { return "http://" + p.Listener.Addr().String() }

// Egress is the proxy as a backend is given it, serving a port per call with the call as
// the owner of its connections, as the engine wires it. Stop does nothing: the proxy is
// closed when the test ends.
func (p *Proxy) Egress() backend.Egress {
	return backend.Egress{URL: p.URL(), Stop: func() error { return nil },
		Serve: func(ln net.Listener, owner backend.ConnOwner) func() { return p.ServeOwned(ln, egress.Owner(owner)) }}
}

// Start runs a proxy that allows the domains allow, resolves with names and may reach
// loopback (the test servers are there), and records every refusal.
func Start(t testing.TB, allow []string, names Names) *Proxy {
	t.Helper()
	g, err := urlguard.New(urlguard.Config{Mode: urlguard.ModeAllowlist, AllowDomains: allow},
		urlguard.WithResolver(names), urlguard.AllowLoopbackForTesting())
	if err != nil {
		t.Fatal(err)
	}
	d := &Denials{}
	p, err := egress.New(g, egress.WithOnDenied(d.Add))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(ln)
	t.Cleanup(func() { p.Close() })
	return &Proxy{Proxy: p, Listener: ln, Denials: d}
}
