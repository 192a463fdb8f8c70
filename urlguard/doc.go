// Package urlguard decides whether Airlock may open a connection to a URL, a
// host or an IP address, and says why not with a stable reason code.
//
// It exists because the classic failure of an agent that can fetch URLs or
// open sockets is a request to 169.254.169.254 (cloud credentials) or to an
// internal admin port, and because attackers do not write those addresses the
// way a string match expects: 2852039166, 0251.0376.0251.0376, 0xa9.254.43518,
// [::ffff:a9fe:a9fe], http://example.com@169.254.169.254/, a name that resolves
// to loopback, or a name whose second answer does (DNS rebinding).
//
// The guard therefore never matches text. [Parse] reads a URL the way a
// browser does (the WHATWG URL standard's host parser: IDNA mapping,
// percent-decoding, the IPv4 number forms, backslashes, the last '@' of the
// authority) and [Guard.Check] decides on the address that comes out; names
// are resolved through an injected [Resolver] and every answer must pass (a
// name that does not resolve is refused: fail closed). Because a resolver can
// answer differently the second time, the decision is taken again at connect
// time: [Guard.Control] is a [net.Dialer] Control function that refuses the
// socket before connect(2) when the IP actually being dialled is blocked, and
// [Guard.DialContext] wires it into a dialer.
//
// The address rules are data (see ranges.go): loopback, private (RFC 1918),
// link-local, cloud metadata, CGNAT, unspecified, broadcast, multicast,
// reserved, documentation, benchmarking, unique-local, and IPv4 hidden inside
// IPv6 (mapped, compatible, NAT64, 6to4, Teredo), which is judged by the IPv4
// address it carries. Metadata addresses and names stay blocked whatever the
// configuration says.
//
// Everything here is pure except through the [Resolver] the caller passes:
// no logging, no global state, fuzzable.
package urlguard
