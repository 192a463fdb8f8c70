package urlguard

import (
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// Target is a URL as a browser reads it: the scheme, the host it would
// connect to, the port, and the request path. Build requests from
// [Target.URL], never from the string that was parsed, so that what was
// checked is what is fetched.
type Target struct {
	Scheme string
	// Host is the canonical host: a lower-case ASCII domain name without a
	// trailing dot, or an IP address in its standard form (IPv6 without
	// brackets). Addr is set when Host is an address.
	Host string
	Addr netip.Addr
	// Port is the explicit port, or the scheme's default.
	Port int
	// ExplicitPort says whether the input named the port.
	ExplicitPort bool
	// HasUserinfo says whether the input carried user:password@ before the
	// host (the host is what follows the last '@').
	HasUserinfo bool
	// RequestURI is the path and query, starting with '/', percent-encoded
	// where a browser would encode; the fragment is dropped (never sent).
	RequestURI string
}

// IsIP says whether the host is an address literal.
func (t Target) IsIP() bool { return t.Addr.IsValid() }

// HostPort is host:port for dialling, with IPv6 in brackets.
func (t Target) HostPort() string {
	return netJoin(t.Host, t.Port)
}

// URL is the canonical URL: scheme://host[:port]/path?query, without
// userinfo or fragment.
func (t Target) URL() string {
	h := t.Host
	if t.Addr.Is6() {
		h = "[" + h + "]"
	}
	if t.ExplicitPort && t.Port != defaultPort(t.Scheme) {
		h += ":" + strconv.Itoa(t.Port)
	}
	return t.Scheme + "://" + h + t.RequestURI
}

func netJoin(host string, port int) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + strconv.Itoa(port)
	}
	return host + ":" + strconv.Itoa(port)
}

func defaultPort(scheme string) int {
	switch scheme {
	case "http", "ws":
		return 80
	case "https", "wss":
		return 443
	case "ftp":
		return 21
	}
	return 0
}

// ParseError is a refusal from parsing, with the reason code.
type ParseError struct {
	Reason Reason
	Detail string
}

func (e *ParseError) Error() string { return string(e.Reason) + ": " + e.Detail }

func parseErr(r Reason, detail string) error { return &ParseError{Reason: r, Detail: detail} }

// Parse reads a URL the way the WHATWG URL standard does for special schemes
// (what browsers do, and close to curl): leading and trailing C0 controls and
// spaces are trimmed and tabs and newlines removed anywhere; any run of '/'
// or '\' after "scheme:" is skipped; the authority ends at the first '/',
// '\', '?' or '#'; the host follows the last '@'; the host is
// percent-decoded, mapped with UTS #46 (IDNA), and read as an IPv4 address in
// any of its number forms when its last label is a number. Only http and
// https are accepted.
func Parse(raw string) (Target, error) {
	s := strings.TrimFunc(raw, func(r rune) bool { return r <= 0x20 })
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return -1
		}
		return r
	}, s)
	colon := strings.IndexByte(s, ':')
	if colon <= 0 {
		return Target{}, parseErr(InvalidURL, "no scheme")
	}
	scheme := strings.ToLower(s[:colon])
	if !validScheme(scheme) {
		return Target{}, parseErr(InvalidURL, "malformed scheme")
	}
	if scheme != "http" && scheme != "https" {
		return Target{}, parseErr(UnsupportedScheme, "scheme "+strconv.Quote(scheme))
	}
	rest := strings.TrimLeft(s[colon+1:], `/\`)
	end := strings.IndexAny(rest, `/\?#`)
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]

	t := Target{Scheme: scheme}
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		t.HasUserinfo = true
		authority = authority[at+1:]
	}
	hostPart, portPart, hasPort := splitHostPort(authority)
	if hasPort && portPart != "" {
		p, err := parsePort(portPart)
		if err != nil {
			return Target{}, err
		}
		t.Port, t.ExplicitPort = p, true
	} else {
		t.Port = defaultPort(scheme)
	}
	host, addr, err := ParseHost(hostPart)
	if err != nil {
		return Target{}, err
	}
	t.Host, t.Addr = host, addr
	t.RequestURI = requestURI(tail)
	return t, nil
}

func validScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// splitHostPort splits at the first ':' outside brackets, as the WHATWG host
// state does.
func splitHostPort(a string) (host, port string, hasPort bool) {
	inBrackets := false
	for i := 0; i < len(a); i++ {
		switch a[i] {
		case '[':
			inBrackets = true
		case ']':
			inBrackets = false
		case ':':
			if !inBrackets {
				return a[:i], a[i+1:], true
			}
		}
	}
	return a, "", false
}

func parsePort(p string) (int, error) {
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return 0, parseErr(InvalidPort, "port "+strconv.Quote(p))
		}
	}
	p = strings.TrimLeft(p, "0")
	if p == "" || len(p) > 5 {
		return 0, parseErr(InvalidPort, "port out of range")
	}
	n, _ := strconv.Atoi(p)
	if n < 1 || n > 65535 {
		return 0, parseErr(InvalidPort, "port out of range")
	}
	return n, nil
}

// requestURI turns the rest of the URL after the authority into a path and
// query that every HTTP client reads the same way: backslashes in the path
// become '/', the fragment is dropped, and bytes a browser would
// percent-encode are encoded (so Go's URL parser accepts what we hand it).
func requestURI(tail string) string {
	if i := strings.IndexByte(tail, '#'); i >= 0 {
		tail = tail[:i]
	}
	path, query, hasQuery := strings.Cut(tail, "?")
	path = strings.ReplaceAll(path, `\`, "/")
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	out := encodeLoose(path)
	if hasQuery {
		out += "?" + encodeLoose(query)
	}
	return out
}

func encodeLoose(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c <= 0x20 || c >= 0x7f || c == '"' || c == '<' || c == '>' || c == '`' || c == '{' || c == '}' || c == '|' || c == '^':
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		case c == '%' && !(i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2])):
			b.WriteString("%25")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// profile is UTS #46 processing as the WHATWG "domain to ASCII" asks for it:
// non-transitional, CheckBidi and CheckJoiners on, CheckHyphens and
// UseSTD3ASCIIRules off (the URL standard then applies its own list of
// forbidden code points).
var profile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.CheckHyphens(false),
	idna.StrictDomainName(false),
)

// ParseHost reads a host as the WHATWG host parser does for special schemes
// and returns its canonical form. An IPv6 literal may come with or without
// brackets. addr is valid when the host is an address.
func ParseHost(h string) (host string, addr netip.Addr, err error) {
	if h == "" {
		return "", netip.Addr{}, parseErr(InvalidHost, "empty host")
	}
	if strings.HasPrefix(h, "[") {
		if !strings.HasSuffix(h, "]") {
			return "", netip.Addr{}, parseErr(InvalidHost, "unclosed IPv6 literal")
		}
		return parseIPv6(h[1 : len(h)-1])
	}
	if strings.Contains(h, ":") {
		// A bare IPv6 literal (hosts taken from command lines, not URLs).
		return parseIPv6(h)
	}
	decoded, ok := percentDecode(h)
	if !ok {
		return "", netip.Addr{}, parseErr(InvalidHost, "bad percent-encoding")
	}
	ascii, err := domainToASCII(decoded)
	if err != nil {
		return "", netip.Addr{}, err
	}
	if endsInNumber(ascii) {
		a, ok := parseIPv4(ascii)
		if !ok {
			return "", netip.Addr{}, parseErr(InvalidHost, "malformed IPv4 address")
		}
		return a.String(), a, nil
	}
	ascii = strings.TrimSuffix(ascii, ".")
	if ascii == "" || strings.HasPrefix(ascii, ".") || strings.Contains(ascii, "..") {
		return "", netip.Addr{}, parseErr(InvalidHost, "empty label")
	}
	return ascii, netip.Addr{}, nil
}

func parseIPv6(s string) (string, netip.Addr, error) {
	if strings.ContainsAny(s, "%") {
		return "", netip.Addr{}, parseErr(InvalidHost, "zoned IPv6 address")
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() {
		return "", netip.Addr{}, parseErr(InvalidHost, "malformed IPv6 address")
	}
	return a.String(), a, nil
}

func percentDecode(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			v, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
			b.WriteByte(byte(v))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String(), true
}

// forbiddenDomain lists the WHATWG forbidden domain code points other than
// C0 controls and DEL, which are checked by range.
const forbiddenDomain = " #%/:<>?@[\\]^|"

func domainToASCII(d string) (string, error) {
	out, err := profile.ToASCII(d)
	if err != nil {
		return "", parseErr(InvalidHost, "IDNA: "+err.Error())
	}
	if out == "" {
		return "", parseErr(InvalidHost, "empty host")
	}
	for i := 0; i < len(out); i++ {
		c := out[i]
		if c < 0x20 || c == 0x7f || c >= 0x80 || strings.IndexByte(forbiddenDomain, c) >= 0 {
			return "", parseErr(InvalidHost, "forbidden character "+strconv.QuoteRune(rune(c)))
		}
	}
	return strings.ToLower(out), nil
}

// endsInNumber is the WHATWG "ends in a number" check: the last label (after
// one trailing dot) is all digits or parses as an IPv4 number (0x…).
func endsInNumber(s string) bool {
	parts := strings.Split(s, ".")
	if parts[len(parts)-1] == "" {
		if len(parts) == 1 {
			return false
		}
		parts = parts[:len(parts)-1]
	}
	last := parts[len(parts)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	_, ok := parseIPv4Number(last)
	return ok
}

// parseIPv4 is the WHATWG IPv4 parser: one to four parts, each decimal,
// octal (leading 0) or hex (0x); the last part fills the remaining bytes.
func parseIPv4(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := parseIPv4Number(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v := last
	for i, n := range nums[:len(nums)-1] {
		v += n << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

// parseIPv4Number reads one part; values that overflow are reported as
// 1<<40, which every caller rejects as too large.
func parseIPv4Number(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := uint64(10)
	switch {
	case len(p) >= 2 && (p[:2] == "0x" || p[:2] == "0X"):
		p, base = p[2:], 16
	case len(p) >= 2 && p[0] == '0':
		p, base = p[1:], 8
	}
	var v uint64
	for i := 0; i < len(p); i++ {
		c := p[i]
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		if v < 1<<40 {
			v = v*base + d
		}
	}
	if v > 1<<40 {
		v = 1 << 40
	}
	return v, true
}
