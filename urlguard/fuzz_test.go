package urlguard

import (
	"context"
	"errors"
	"hash/fnv"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"testing"
)

// hashResolver answers every name with one address picked from a pool of
// blocked and public ones by a hash of the name, so the fuzzer reaches every
// class through names as well as through literals.
type hashResolver struct{}

var pool = []string{
	"127.0.0.1", "10.0.0.1", "169.254.169.254", "100.100.100.200", "::1", "::ffff:127.0.0.1",
	"fd00:ec2::254", "64:ff9b::a9fe:a9fe", "0.0.0.0", "192.168.1.1", "fe80::1",
	"93.184.215.14", "2606:2800:21f:cb07::1", "8.8.4.4",
}

func (hashResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	h := fnv.New32a()
	h.Write([]byte(host))
	n := h.Sum32()
	if n%7 == 0 {
		return nil, errors.New("no such host")
	}
	return []netip.Addr{netip.MustParseAddr(pool[n%uint32(len(pool))])}, nil
}

// blockedOracle is written apart from the guard's tables, from the standard
// library's predicates, so that a mistake in one is caught by the other.
func blockedOracle(a netip.Addr) bool {
	a = a.Unmap()
	switch {
	case a.IsLoopback(), a.IsPrivate(), a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast(),
		a.IsMulticast(), a.IsUnspecified(), a.IsInterfaceLocalMulticast():
		return true
	}
	for _, m := range []string{"169.254.169.254", "100.100.100.200", "fd00:ec2::254"} {
		if a == netip.MustParseAddr(m) {
			return true
		}
	}
	if a.Is4() {
		b := a.As4()
		return b[0] == 0 || b[0] >= 224 || b[0] == 100 && b[1]&0xc0 == 64
	}
	b := a.As16()
	if b[0] == 0 && b[1] == 0 || b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b {
		return true // ::/16 and NAT64 carry IPv4 or are reserved
	}
	return false
}

var errFakeDial = errors.New("fake dial")

// FuzzAllowedNeverDialsBlocked: for any input the guard allows, the request
// built from its canonical URL dials (per a fake dialer recording the final
// host and the IPs it resolves to) only addresses the oracle calls public.
func FuzzAllowedNeverDialsBlocked(f *testing.F) {
	for _, tc := range spellingCases {
		f.Add(tc.url)
	}
	for _, s := range []string{"http://a.b/", "http://x@y@z/", `http://\\a\b`, "http://[::ffff:7f00:1]/", "http://0x7f000001/", "https://1.1.1.1:0443/"} {
		f.Add(s)
	}
	g, err := New(Config{Mode: ModeOpen}, WithResolver(hashResolver{}))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		ctx := context.Background()
		d := g.CheckURL(ctx, raw)
		if !d.Allowed {
			if d.Reason == Allowed || d.Reason == "" {
				t.Fatalf("refusal without a reason for %q", raw)
			}
			return
		}
		for _, a := range d.Addrs {
			if blockedOracle(a) {
				t.Fatalf("%q allowed with blocked address %s", raw, a)
			}
		}
		canonical := d.Target.URL()
		u, err := url.Parse(canonical)
		if err != nil {
			return // the client refuses it: nothing is dialled
		}
		if u.Hostname() != d.Target.Host {
			t.Fatalf("%q: Go reads host %q from canonical %q, the guard checked %q", raw, u.Hostname(), canonical, d.Target.Host)
		}
		var dialled []string
		tr := &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				dialled = append(dialled, addr)
				return nil, errFakeDial
			},
			DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				dialled = append(dialled, addr)
				return nil, errFakeDial
			},
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, canonical, nil)
		if err != nil {
			return
		}
		resp, err := tr.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
			t.Fatal("fake dial answered")
		}
		for _, addr := range dialled {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				t.Fatalf("dialled %q", addr)
			}
			ips := []netip.Addr{}
			if a, err := netip.ParseAddr(host); err == nil {
				ips = append(ips, a)
			} else {
				if host != d.Target.Host {
					t.Fatalf("%q: dialled host %q, checked %q", raw, host, d.Target.Host)
				}
				ips, _ = hashResolver{}.LookupNetIP(ctx, "ip", host)
			}
			for _, a := range ips {
				if blockedOracle(a) {
					t.Fatalf("%q: allowed, and the dial went to blocked %s (%s)", raw, a, addr)
				}
			}
		}
	})
}
