package shellrisk

import (
	"strings"

	"github.com/airlock-dev/airlock/urlguard"
)

// hostScan judges the destinations a network-capable command names with the URL guard
// (package urlguard), reading every spelling the guard reads — 0x7f.1, 0251.254.169.254,
// [::ffff:a9fe:a9fe], user@127.0.0.1, http://example.com@10.0.0.1/ — instead of matching
// strings: a metadata endpoint is metadata_access (hard deny), any other address the guard
// blocks (loopback, private, link-local, …) is internal_address, with the guard's reason in
// the segment. Names are not resolved (the classifier does no I/O): the egress proxy and
// the dialer check what they resolve to.
func (w *walker) hostScan(args []arg, seg string) {
	for _, a := range args {
		if a.dynamic && a.text == "" {
			continue
		}
		for _, h := range hostCandidates(a.text) {
			r, canonical := urlguard.ClassifyHost(h)
			switch r {
			case urlguard.Allowed, urlguard.InvalidHost, urlguard.InvalidPort:
				continue
			case urlguard.Metadata:
				w.add(codeMetadataAccess, seg)
			default:
				w.add(codeInternalAddress, seg+" [urlguard: "+string(r)+" "+canonical+"]")
			}
		}
	}
}

// hostCandidates picks out of one word (or a line of interpreter code) the parts that name
// a host: the authority of anything with "://", the host after user@ (ssh, scp), host:port,
// and bare address literals that cannot be a number of something else (at least two dots,
// a 0x part, or an IPv6 literal).
func hostCandidates(text string) []string {
	var out []string
	for _, tok := range strings.FieldsFunc(text, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '"' || r == '\'' || r == '`' || r == '(' || r == ')' ||
			r == ',' || r == ';' || r == '<' || r == '>' || r == '{' || r == '}' || r == '='
	}) {
		if i := strings.Index(tok, "://"); i >= 0 {
			if h := authorityHost(tok[i+3:]); h != "" {
				out = append(out, h)
			}
			continue
		}
		if i := strings.LastIndexByte(tok, '@'); i >= 0 && i+1 < len(tok) {
			// user@host, user@host:path (scp)
			h := tok[i+1:]
			if j := strings.IndexByte(h, '/'); j >= 0 {
				h = h[:j]
			}
			out = append(out, stripPort(h))
			continue
		}
		h := stripPort(strings.TrimSuffix(tok, "/"))
		if looksLikeAddress(h) {
			out = append(out, h)
		}
	}
	return out
}

// authorityHost is the host of a URL's authority as browsers read it: up to the first
// '/', '\', '?' or '#', after the last '@', without the port.
func authorityHost(rest string) string {
	rest = strings.TrimLeft(rest, `/\`)
	if i := strings.IndexAny(rest, `/\?#`); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:]
	}
	return stripPort(rest)
}

// stripPort drops a :port from host:port and [v6]:port; a bare IPv6 literal is kept whole.
func stripPort(h string) string {
	if strings.HasPrefix(h, "[") {
		if i := strings.IndexByte(h, ']'); i >= 0 {
			return h[:i+1]
		}
		return h
	}
	if strings.Count(h, ":") == 1 {
		return h[:strings.IndexByte(h, ':')]
	}
	return h
}

func looksLikeAddress(h string) bool {
	if strings.HasPrefix(h, "[") || strings.Count(h, ":") >= 2 {
		return true
	}
	if strings.Trim(h, "0123456789abcdefABCDEFxX.") != "" {
		return false
	}
	return strings.Count(h, ".") >= 2 || strings.Contains(strings.ToLower(h), "0x")
}
