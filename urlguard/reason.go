package urlguard

// Reason is a stable, snake_case code saying why the guard decided as it did.
// Receipts, the `airlock urlcheck` output and tests outside the repository
// depend on these strings: add codes, never rename one.
type Reason string

const (
	// Allowed: the destination passed every rule.
	Allowed Reason = "allowed"

	// Refusals about the input itself.
	InvalidURL        Reason = "invalid_url"        // not a URL a browser would parse
	UnsupportedScheme Reason = "unsupported_scheme" // only http and https
	InvalidHost       Reason = "invalid_host"       // empty, forbidden characters, bad IDNA, bad IPv4/IPv6 literal
	InvalidPort       Reason = "invalid_port"       // not a number in 1..65535
	Unresolvable      Reason = "unresolvable"       // the name did not resolve (fail closed)

	// Refusals about the address (or the name) reached.
	Loopback      Reason = "loopback"      // 127/8, ::1, localhost
	Private       Reason = "private"       // RFC 1918
	LinkLocal     Reason = "link_local"    // 169.254/16, fe80::/10
	Metadata      Reason = "metadata"      // cloud instance metadata endpoints, by address or name
	CGNAT         Reason = "cgnat"         // 100.64/10 shared address space
	Unspecified   Reason = "unspecified"   // 0.0.0.0, ::
	Broadcast     Reason = "broadcast"     // 255.255.255.255
	Multicast     Reason = "multicast"     // 224/4, ff00::/8
	Reserved      Reason = "reserved"      // 0/8, 240/4, 192.0.0/24, ::/8 leftovers, non-global IPv6, …
	Documentation Reason = "documentation" // 192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32, 3fff::/20
	Benchmarking  Reason = "benchmarking"  // 198.18/15, 2001:2::/48
	UniqueLocal   Reason = "unique_local"  // fc00::/7
	IPv4Embedded  Reason = "ipv4_embedded" // NAT64, 6to4, Teredo, IPv4-compatible: a tunnel, refused even to public IPv4

	// Refusals from the [network] configuration.
	NetworkDisabled Reason = "network_disabled" // mode = "none"
	DeniedDomain    Reason = "denied_domain"    // matched deny_domains
	NotAllowlisted  Reason = "not_allowlisted"  // mode = "allowlist" and no allow_domains entry matched
)

// description is what each code means, for messages a person or a model reads.
var description = map[Reason]string{
	Allowed:           "the destination is allowed",
	InvalidURL:        "not a valid URL",
	UnsupportedScheme: "only http and https URLs are allowed",
	InvalidHost:       "the host is not a valid name or address",
	InvalidPort:       "the port is not a number between 1 and 65535",
	Unresolvable:      "the name does not resolve",
	Loopback:          "a loopback address (this machine)",
	Private:           "a private network address (RFC 1918)",
	LinkLocal:         "a link-local address",
	Metadata:          "a cloud instance metadata endpoint",
	CGNAT:             "a carrier-grade NAT shared address (100.64.0.0/10)",
	Unspecified:       "the unspecified address",
	Broadcast:         "the broadcast address",
	Multicast:         "a multicast address",
	Reserved:          "a reserved address",
	Documentation:     "an address reserved for documentation",
	Benchmarking:      "an address reserved for benchmarking",
	UniqueLocal:       "an IPv6 unique-local address (fc00::/7)",
	IPv4Embedded:      "an IPv6 tunnel or translation address carrying an IPv4 address",
	NetworkDisabled:   "network access is off ([network] mode = \"none\")",
	DeniedDomain:      "the host matches [network] deny_domains",
	NotAllowlisted:    "the host is not in [network] allow_domains",
}

// Describe says in a few words what r means.
func (r Reason) Describe() string {
	if d, ok := description[r]; ok {
		return d
	}
	return string(r)
}
