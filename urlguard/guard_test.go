package urlguard

import (
	"context"
	"errors"
	"net/netip"
	"testing"
)

// fakeResolver answers from a table; a name it does not know does not
// resolve.
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	list, ok := f[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	out := make([]netip.Addr, 0, len(list))
	for _, s := range list {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

var testNames = fakeResolver{
	"example.com":         {"93.184.215.14"},
	"www.example.com":     {"93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
	"rebind.example":      {"93.184.215.14", "127.0.0.1"},
	"internal.example":    {"10.1.2.3"},
	"meta.example":        {"169.254.169.254"},
	"v6meta.example":      {"fd00:ec2::254"},
	"xn--bcher-kva.de":    {"93.184.215.15"},
	"127.0.0.1.nip.io":    {"127.0.0.1"},
	"empty.example":       {},
	"sub.allowed.example": {"93.184.215.16"},
	"allowed.example":     {"93.184.215.17"},
	"localhost":           {"127.0.0.1"},
}

func openGuard(t *testing.T, opts ...Option) *Guard {
	t.Helper()
	g, err := New(Config{Mode: ModeOpen}, append([]Option{WithResolver(testNames)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

var spellingCases = []struct {
	name, url string
	want      Reason
	host      string // canonical host, when parsing succeeds
}{
	// Metadata in every spelling.
	{"metadata dotted", "http://169.254.169.254/latest/meta-data/", Metadata, "169.254.169.254"},
	{"metadata decimal", "http://2852039166/", Metadata, "169.254.169.254"},
	{"metadata octal", "http://0251.0376.0251.0376/", Metadata, "169.254.169.254"},
	{"metadata octal padded", "http://00000251.0376.0251.0376/", Metadata, "169.254.169.254"},
	{"metadata hex", "http://0xa9fea9fe/", Metadata, "169.254.169.254"},
	{"metadata hex upper", "http://0XA9FEA9FE/", Metadata, "169.254.169.254"},
	{"metadata dotted hex", "http://0xa9.0xfe.0xa9.0xfe/", Metadata, "169.254.169.254"},
	{"metadata mixed", "http://0xa9.254.0251.0xfe/", Metadata, "169.254.169.254"},
	{"metadata three parts", "http://169.254.43518/", Metadata, "169.254.169.254"},
	{"metadata two parts", "http://169.16689662/", Metadata, "169.254.169.254"},
	{"metadata trailing dot", "http://169.254.169.254./", Metadata, "169.254.169.254"},
	{"metadata percent host", "http://%31%36%39.254.169.254/", Metadata, "169.254.169.254"},
	{"metadata fullwidth", "http://１６９．２５４．１６９．２５４/", Metadata, "169.254.169.254"},
	{"metadata ideographic dots", "http://169。254。169。254/", Metadata, "169.254.169.254"},
	{"metadata mapped", "http://[::ffff:169.254.169.254]/", Metadata, "::ffff:169.254.169.254"},
	{"metadata mapped hex", "http://[::ffff:a9fe:a9fe]/", Metadata, "::ffff:169.254.169.254"},
	{"metadata compatible", "http://[::169.254.169.254]/", Metadata, "::a9fe:a9fe"},
	{"metadata nat64", "http://[64:ff9b::a9fe:a9fe]/", Metadata, "64:ff9b::a9fe:a9fe"},
	{"metadata nat64 local", "http://[64:ff9b:1::a9fe:a9fe]/", Metadata, "64:ff9b:1::a9fe:a9fe"},
	{"metadata 6to4", "http://[2002:a9fe:a9fe::1]/", Metadata, "2002:a9fe:a9fe::1"},
	{"metadata teredo client", "http://[2001:0:4136:e378:8000:63bf:5601:5601]/", Metadata, "2001:0:4136:e378:8000:63bf:5601:5601"},
	{"metadata aws v6", "http://[fd00:ec2::254]/", Metadata, "fd00:ec2::254"},
	{"metadata gcp name", "http://metadata.google.internal/computeMetadata/v1/", Metadata, "metadata.google.internal"},
	{"metadata gcp name upper dot", "http://METADATA.Google.Internal./", Metadata, "metadata.google.internal"},
	{"metadata bare name", "http://metadata/", Metadata, "metadata"},
	{"metadata azure name", "http://metadata.azure.com/", Metadata, "metadata.azure.com"},
	{"metadata alibaba", "http://100.100.100.200/latest/meta-data/", Metadata, "100.100.100.200"},
	{"metadata ecs", "http://169.254.170.2/v2/credentials", Metadata, "169.254.170.2"},
	{"metadata by name lookup", "http://meta.example/", Metadata, "meta.example"},
	{"metadata v6 by lookup", "http://v6meta.example/", Metadata, "v6meta.example"},
	{"metadata userinfo trick", "http://example.com@169.254.169.254/", Metadata, "169.254.169.254"},
	{"metadata backslash trick", `http://169.254.169.254\@example.com/`, Metadata, "169.254.169.254"},

	// Loopback in every spelling.
	{"loopback", "http://127.0.0.1/", Loopback, "127.0.0.1"},
	{"loopback short", "http://127.1/", Loopback, "127.0.0.1"},
	{"loopback hex short", "http://0x7f.1/", Loopback, "127.0.0.1"},
	{"loopback decimal", "http://2130706433/", Loopback, "127.0.0.1"},
	{"loopback octal", "http://017700000001/", Loopback, "127.0.0.1"},
	{"loopback other", "http://127.255.255.254:8080/", Loopback, "127.255.255.254"},
	{"loopback v6", "http://[::1]/", Loopback, "::1"},
	{"loopback v6 long", "http://[0000:0000:0000:0000:0000:0000:0000:0001]/", Loopback, "::1"},
	{"loopback mapped", "http://[::ffff:127.0.0.1]/", Loopback, "::ffff:127.0.0.1"},
	{"localhost", "http://localhost:8080/", Loopback, "localhost"},
	{"localhost upper dot", "http://LOCALHOST./", Loopback, "localhost"},
	{"localhost sub", "http://a.localhost/", Loopback, "a.localhost"},
	{"loopback by name", "http://127.0.0.1.nip.io/", Loopback, "127.0.0.1.nip.io"},
	{"loopback userinfo", "http://example.com@127.0.0.1/", Loopback, "127.0.0.1"},
	{"loopback userinfo pass", "http://user:pass@127.1:80/", Loopback, "127.0.0.1"},
	{"loopback double at", "http://a@example.com@127.0.0.1/", Loopback, "127.0.0.1"},
	{"loopback backslashes", `http:\\127.0.0.1\admin`, Loopback, "127.0.0.1"},
	{"loopback no slashes", "http:127.0.0.1/", Loopback, "127.0.0.1"},
	{"loopback many slashes", "http:////127.0.0.1/", Loopback, "127.0.0.1"},
	{"loopback tab inside", "http://12\t7.0.0.1/", Loopback, "127.0.0.1"},
	{"loopback newline inside", "http://127.0.\n0.1/", Loopback, "127.0.0.1"},
	{"loopback leading space", "  http://127.0.0.1/ ", Loopback, "127.0.0.1"},
	{"loopback scheme upper", "HTTP://127.0.0.1/", Loopback, "127.0.0.1"},
	{"loopback https", "https://127.0.0.1:8443/", Loopback, "127.0.0.1"},
	{"loopback percent dot", "http://127%2E0%2E0%2E1/", Loopback, "127.0.0.1"},
	{"loopback fullwidth", "http://１２７.０.０.１/", Loopback, "127.0.0.1"},

	// Other classes.
	{"unspecified", "http://0.0.0.0/", Unspecified, "0.0.0.0"},
	{"unspecified zero", "http://0/", Unspecified, "0.0.0.0"},
	{"unspecified v6", "http://[::]/", Unspecified, "::"},
	{"this network", "http://0.1.2.3/", Reserved, "0.1.2.3"},
	{"private 10", "http://10.0.0.1/", Private, "10.0.0.1"},
	{"private 172", "http://172.16.5.4/", Private, "172.16.5.4"},
	{"private 172 top", "http://172.31.255.255/", Private, "172.31.255.255"},
	{"private 192", "http://192.168.1.1/", Private, "192.168.1.1"},
	{"private decimal", "http://167772161/", Private, "10.0.0.1"},
	{"private by name", "http://internal.example/", Private, "internal.example"},
	{"private mapped", "http://[::ffff:10.0.0.1]/", Private, "::ffff:10.0.0.1"},
	{"link local", "http://169.254.0.1/", LinkLocal, "169.254.0.1"},
	{"link local top", "http://169.254.255.255/", LinkLocal, "169.254.255.255"},
	{"link local v6", "http://[fe80::1]/", LinkLocal, "fe80::1"},
	{"link local v6 zone", "http://[fe80::1%25eth0]/", InvalidHost, ""},
	{"cgnat", "http://100.64.0.1/", CGNAT, "100.64.0.1"},
	{"cgnat top", "http://100.127.255.254/", CGNAT, "100.127.255.254"},
	{"broadcast", "http://255.255.255.255/", Broadcast, "255.255.255.255"},
	{"broadcast decimal", "http://4294967295/", Broadcast, "255.255.255.255"},
	{"multicast", "http://224.0.0.1/", Multicast, "224.0.0.1"},
	{"multicast v6", "http://[ff02::1]/", Multicast, "ff02::1"},
	{"reserved class e", "http://240.0.0.1/", Reserved, "240.0.0.1"},
	{"reserved ietf", "http://192.0.0.8/", Reserved, "192.0.0.8"},
	{"documentation 1", "http://192.0.2.1/", Documentation, "192.0.2.1"},
	{"documentation 2", "http://198.51.100.7/", Documentation, "198.51.100.7"},
	{"documentation 3", "http://203.0.113.9/", Documentation, "203.0.113.9"},
	{"documentation v6", "http://[2001:db8::1]/", Documentation, "2001:db8::1"},
	{"documentation v6 new", "http://[3fff::1]/", Documentation, "3fff::1"},
	{"benchmarking", "http://198.18.0.1/", Benchmarking, "198.18.0.1"},
	{"benchmarking top", "http://198.19.255.255/", Benchmarking, "198.19.255.255"},
	{"benchmarking v6", "http://[2001:2::1]/", Benchmarking, "2001:2::1"},
	{"unique local", "http://[fc00::1]/", UniqueLocal, "fc00::1"},
	{"unique local fd", "http://[fd12:3456::1]/", UniqueLocal, "fd12:3456::1"},
	{"site local", "http://[fec0::1]/", Reserved, "fec0::1"},
	{"discard v6", "http://[100::1]/", Reserved, "100::1"},
	{"non global v6", "http://[4000::1]/", Reserved, "4000::1"},
	{"nat64 public", "http://[64:ff9b::5db8:d70e]/", IPv4Embedded, "64:ff9b::5db8:d70e"},
	{"6to4 public", "http://[2002:5db8:d70e::1]/", IPv4Embedded, "2002:5db8:d70e::1"},
	{"teredo public", "http://[2001:0:5db8:d70e::a247:28f0]/", IPv4Embedded, "2001:0:5db8:d70e::a247:28f0"},
	{"6to4 private", "http://[2002:0a00:0001::1]/", Private, "2002:a00:1::1"},
	{"nat64 loopback", "http://[64:ff9b::7f00:1]/", Loopback, "64:ff9b::7f00:1"},

	// Allowed.
	{"public", "http://example.com/", Allowed, "example.com"},
	{"public path", "https://www.example.com/a/b?c=d#frag", Allowed, "www.example.com"},
	{"public ip", "http://93.184.215.14/", Allowed, "93.184.215.14"},
	{"public decimal", "http://1572394766/", Allowed, "93.184.215.14"},
	{"public mapped", "http://[::ffff:93.184.215.14]/", Allowed, "::ffff:93.184.215.14"},
	{"public v6", "http://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/", Allowed, "2606:2800:21f:cb07:6820:80da:af6b:8b2c"},
	{"public trailing dot", "http://example.com./", Allowed, "example.com"},
	{"public upper", "http://EXAMPLE.com/", Allowed, "example.com"},
	{"idna", "http://bücher.de/", Allowed, "xn--bcher-kva.de"},
	{"idna punycode", "http://xn--bcher-kva.de/", Allowed, "xn--bcher-kva.de"},
	{"idna percent", "http://b%C3%BCcher.de/", Allowed, "xn--bcher-kva.de"},
	{"userinfo to public", "http://127.0.0.1@example.com/", Allowed, "example.com"},
	{"public not 172.32", "http://172.32.0.1/", Allowed, "172.32.0.1"},
	{"public not 100.128", "http://100.128.0.1/", Allowed, "100.128.0.1"},

	// Fail closed.
	{"unresolvable", "http://nonexistent.example/", Unresolvable, "nonexistent.example"},
	{"resolves to nothing", "http://empty.example/", Unresolvable, "empty.example"},
	{"rebinding answer", "http://rebind.example/", Loopback, "rebind.example"},
	{"no scheme", "example.com", InvalidURL, ""},
	{"relative", "/etc/passwd", InvalidURL, ""},
	{"empty", "", InvalidURL, ""},
	{"file", "file:///etc/passwd", UnsupportedScheme, ""},
	{"gopher", "gopher://127.0.0.1:6379/_INFO", UnsupportedScheme, ""},
	{"ftp", "ftp://example.com/", UnsupportedScheme, ""},
	{"javascript", "javascript:alert(1)", UnsupportedScheme, ""},
	{"empty host", "http:///", InvalidHost, ""},
	{"only userinfo", "http://user@/", InvalidHost, ""},
	{"five parts", "http://1.2.3.4.5/", InvalidHost, ""},
	{"part too big", "http://256.1.1.1/", InvalidHost, ""},
	{"last too big", "http://1.2.3.256/", InvalidHost, ""},
	{"too big", "http://4294967296/", InvalidHost, ""},
	{"bad octal", "http://09.1.1.1/", InvalidHost, ""},
	{"bad hex", "http://0xg.1.1.1/", InvalidHost, ""},
	{"empty part", "http://1..1.1/", InvalidHost, ""},
	{"bad v6", "http://[::1::2]/", InvalidHost, ""},
	{"unclosed v6", "http://[::1/", InvalidHost, ""},
	{"v4 in brackets", "http://[127.0.0.1]/", InvalidHost, ""},
	{"forbidden char", "http://exa<mple.com/", InvalidHost, ""},
	{"percent space", "http://exa%20mple.com/", InvalidHost, ""},
	{"percent null", "http://example.com%00.evil/", InvalidHost, ""},
	{"bad port", "http://example.com:abc/", InvalidPort, ""},
	{"port too big", "http://example.com:65536/", InvalidPort, ""},
	{"port zero", "http://example.com:0/", InvalidPort, ""},
}

func TestCheckURLSpellings(t *testing.T) {
	t.Parallel()
	g := openGuard(t)
	for _, tc := range spellingCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := g.CheckURL(context.Background(), tc.url)
			if d.Reason != tc.want {
				t.Fatalf("CheckURL(%q) = %s (%s), want %s", tc.url, d.Reason, d.Detail, tc.want)
			}
			if d.Allowed != (tc.want == Allowed) {
				t.Fatalf("CheckURL(%q).Allowed = %v with reason %s", tc.url, d.Allowed, d.Reason)
			}
			if tc.host != "" && d.Target.Host != tc.host {
				t.Fatalf("CheckURL(%q) host = %q, want %q", tc.url, d.Target.Host, tc.host)
			}
			if !d.Allowed && d.Err() == nil {
				t.Fatal("refusal without error")
			}
		})
	}
}

func TestParseCanonicalURL(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"http://example.com", "http://example.com/"},
		{"HTTP://Example.COM:80/a", "http://example.com/a"},
		{"https://example.com:8443/a?b=c#d", "https://example.com:8443/a?b=c"},
		{`http://example.com\a\b?c\d`, `http://example.com/a/b?c\d`},
		{"http://u:p@example.com/x", "http://example.com/x"},
		{"http://example.com/a b", "http://example.com/a%20b"},
		{"http://example.com/%zz", "http://example.com/%25zz"},
		{"http://[::FFFF:1.2.3.4]:81/", "http://[::ffff:1.2.3.4]:81/"},
		{"http://example.com?q", "http://example.com/?q"},
		{"http://bücher.de/ü", "http://xn--bcher-kva.de/%C3%BC"},
	}
	for _, tc := range cases {
		tg, err := Parse(tc.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		if got := tg.URL(); got != tc.want {
			t.Errorf("Parse(%q).URL() = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCheckHostCommandLineForms(t *testing.T) {
	t.Parallel()
	g := openGuard(t)
	cases := []struct {
		host string
		want Reason
	}{
		{"169.254.169.254", Metadata},
		{"0251.254.169.254", Metadata},
		{"[::ffff:a9fe:a9fe]", Metadata},
		{"::ffff:a9fe:a9fe", Metadata},
		{"169.254.0.1", LinkLocal},
		{"10.0.0.1", Private},
		{"127.1", Loopback},
		{"localhost", Loopback},
		{"example.com", Allowed},
		{"", InvalidHost},
	}
	for _, tc := range cases {
		if d := g.CheckHost(context.Background(), tc.host, 22); d.Reason != tc.want {
			t.Errorf("CheckHost(%q) = %s (%s), want %s", tc.host, d.Reason, d.Detail, tc.want)
		}
	}
}

func TestConfigModesAndDomains(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name string
		cfg  Config
		url  string
		want Reason
	}{
		{"default is none", Config{}, "http://example.com/", NetworkDisabled},
		{"none still names the class", Config{}, "http://127.0.0.1/", Loopback},
		{"allowlist hit", Config{Mode: ModeAllowlist, AllowDomains: []string{"allowed.example"}}, "http://allowed.example/", Allowed},
		{"allowlist wildcard hit", Config{Mode: ModeAllowlist, AllowDomains: []string{"*.allowed.example"}}, "http://sub.allowed.example/", Allowed},
		{"allowlist wildcard not apex", Config{Mode: ModeAllowlist, AllowDomains: []string{"*.allowed.example"}}, "http://allowed.example/", NotAllowlisted},
		{"allowlist miss", Config{Mode: ModeAllowlist, AllowDomains: []string{"allowed.example"}}, "http://example.com/", NotAllowlisted},
		{"allowlist suffix is not a match", Config{Mode: ModeAllowlist, AllowDomains: []string{"example.com"}}, "http://www.example.com/", NotAllowlisted},
		{"allowlist idna pattern", Config{Mode: ModeAllowlist, AllowDomains: []string{"bücher.de"}}, "http://xn--bcher-kva.de/", Allowed},
		{"allowlisted name to private", Config{Mode: ModeAllowlist, AllowDomains: []string{"internal.example"}}, "http://internal.example/", Private},
		{"deny wins", Config{Mode: ModeOpen, DenyDomains: []string{"*.example.com", "example.com"}}, "http://www.example.com/", DeniedDomain},
		{"deny over allow", Config{Mode: ModeAllowlist, AllowDomains: []string{"example.com"}, DenyDomains: []string{"example.com"}}, "http://example.com/", DeniedDomain},
		{"allow private", Config{Mode: ModeOpen, AllowPrivate: true}, "http://10.0.0.1/", Allowed},
		{"allow private cgnat", Config{Mode: ModeOpen, AllowPrivate: true}, "http://100.64.1.1/", Allowed},
		{"allow private ula", Config{Mode: ModeOpen, AllowPrivate: true}, "http://[fd12::1]/", Allowed},
		{"allow private keeps metadata", Config{Mode: ModeOpen, AllowPrivate: true}, "http://169.254.169.254/", Metadata},
		{"allow private keeps metadata v6", Config{Mode: ModeOpen, AllowPrivate: true}, "http://[fd00:ec2::254]/", Metadata},
		{"allow private keeps alibaba", Config{Mode: ModeOpen, AllowPrivate: true}, "http://100.100.100.200/", Metadata},
		{"allow private keeps metadata name", Config{Mode: ModeOpen, AllowPrivate: true}, "http://metadata.google.internal/", Metadata},
		{"allow private keeps loopback", Config{Mode: ModeOpen, AllowPrivate: true}, "http://127.0.0.1/", Loopback},
		{"allow private keeps link local", Config{Mode: ModeOpen, AllowPrivate: true}, "http://169.254.1.1/", LinkLocal},
		{"allowlisted metadata stays blocked", Config{Mode: ModeAllowlist, AllowDomains: []string{"metadata.google.internal", "169.254.169.254"}, AllowPrivate: true}, "http://metadata.google.internal/", Metadata},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, err := New(tc.cfg, WithResolver(testNames))
			if err != nil {
				t.Fatal(err)
			}
			if d := g.CheckURL(ctx, tc.url); d.Reason != tc.want {
				t.Fatalf("%s: got %s (%s), want %s", tc.url, d.Reason, d.Detail, tc.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	bad := []Config{
		{Mode: "closed"},
		{Mode: ModeAllowlist, AllowDomains: []string{"exa*mple.com"}},
		{Mode: ModeAllowlist, AllowDomains: []string{"*"}},
		{Mode: ModeAllowlist, AllowDomains: []string{""}},
		{Mode: ModeOpen, DenyDomains: []string{"*.10.0.0.1"}},
		{Mode: ModeOpen, DenyDomains: []string{"a b"}},
	}
	for _, c := range bad {
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", c)
		}
	}
	if err := (Config{Mode: ModeAllowlist, AllowDomains: []string{"*.example.com", "example.org"}}).Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestAllowLoopbackForTesting(t *testing.T) {
	t.Parallel()
	g := openGuard(t, AllowLoopbackForTesting())
	for _, u := range []string{"http://127.0.0.1:1234/", "http://localhost/"} {
		if d := g.CheckURL(context.Background(), u); !d.Allowed {
			t.Errorf("%s refused with the test allowance: %s", u, d.Reason)
		}
	}
	if d := g.CheckURL(context.Background(), "http://169.254.169.254/"); d.Allowed {
		t.Error("metadata allowed with the loopback test allowance")
	}
}
