package urlguard

import (
	"net/netip"
	"strings"
)

// rule is one row of the address table: the first row whose prefix holds the
// address decides. Kept as data so that a reviewer reads the policy, not code.
type rule struct {
	prefix netip.Prefix
	reason Reason
}

func rules(rows ...string) []rule {
	out := make([]rule, 0, len(rows)/2)
	for i := 0; i < len(rows); i += 2 {
		out = append(out, rule{netip.MustParsePrefix(rows[i]), Reason(rows[i+1])})
	}
	return out
}

// metadataAddrs are instance metadata (and metadata-adjacent) endpoints of
// cloud providers. They stay blocked even with allow_private.
var metadataAddrs = rules(
	"169.254.169.254/32", "metadata", // AWS, GCP, Azure, OCI, DigitalOcean, OpenStack, …
	"169.254.169.253/32", "metadata", // AWS VPC DNS
	"169.254.169.123/32", "metadata", // AWS time sync
	"169.254.170.2/32", "metadata", // AWS ECS task credentials
	"169.254.170.23/32", "metadata", // AWS EKS pod identity
	"169.254.0.23/32", "metadata", // Tencent Cloud
	"100.100.100.200/32", "metadata", // Alibaba Cloud
	"168.63.129.16/32", "metadata", // Azure WireServer
	"fd00:ec2::254/128", "metadata", // AWS IPv6 IMDS
	"fd00:ec2::23/128", "metadata", // AWS IPv6 DNS
	"fd00:ec2::123/128", "metadata", // AWS IPv6 time sync
	"fd00:ec2::250/128", "metadata", // AWS IPv6 EKS pod identity (reserved range)
	"fd20:ce::254/128", "metadata", // GCP IPv6 metadata
)

// v4Rules covers every IPv4 address that is not ordinary public unicast.
var v4Rules = rules(
	"0.0.0.0/32", "unspecified",
	"0.0.0.0/8", "reserved", // "this network"; Linux connects 0.x to the host itself
	"10.0.0.0/8", "private",
	"100.64.0.0/10", "cgnat",
	"127.0.0.0/8", "loopback",
	"169.254.0.0/16", "link_local",
	"172.16.0.0/12", "private",
	"192.0.0.0/24", "reserved", // IETF protocol assignments
	"192.0.2.0/24", "documentation",
	"192.31.196.0/24", "reserved", // AS112
	"192.52.193.0/24", "reserved", // AMT
	"192.88.99.0/24", "reserved", // 6to4 relay anycast (deprecated)
	"192.168.0.0/16", "private",
	"192.175.48.0/24", "reserved", // AS112 direct delegation
	"198.18.0.0/15", "benchmarking",
	"198.51.100.0/24", "documentation",
	"203.0.113.0/24", "documentation",
	"224.0.0.0/4", "multicast",
	"255.255.255.255/32", "broadcast",
	"240.0.0.0/4", "reserved",
)

// v6Rules covers IPv6 after the embedded-IPv4 forms have been handled. Only
// global unicast (2000::/3) outside these rows is allowed.
var v6Rules = rules(
	"::/128", "unspecified",
	"::1/128", "loopback",
	"::/8", "reserved", // includes the deprecated IPv4-compatible ::/96 leftovers
	"100::/64", "reserved", // discard-only
	"2001:2::/48", "benchmarking",
	"2001:db8::/32", "documentation",
	"2001::/23", "reserved", // IETF protocol assignments (ORCHID, AMT, …)
	"3fff::/20", "documentation",
	"5f00::/16", "reserved", // SRv6 SIDs
	"fc00::/7", "unique_local",
	"fe80::/10", "link_local",
	"fec0::/10", "reserved", // deprecated site-local
	"ff00::/8", "multicast",
)

var globalUnicast = netip.MustParsePrefix("2000::/3")

// Forms of IPv6 that carry an IPv4 address. Each is judged by the IPv4 address
// inside: a blocked one refuses with its own reason (::ffff:169.254.169.254 is
// metadata). A mapped address is an IPv4 address (the kernel dials it as one),
// so a public one is allowed; the tunnels and translators are refused even to
// public IPv4 (ipv4_embedded), because the far end is a relay Airlock cannot
// judge.
var (
	mapped     = netip.MustParsePrefix("::ffff:0:0/96")
	compatible = netip.MustParsePrefix("::/96")
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	teredo     = netip.MustParsePrefix("2001::/32")
)

// metadataNames are host names of metadata services; a name equal to one of
// these, or below one, is refused before any lookup.
var metadataNames = []string{
	"metadata",
	"metadata.google.internal",
	"metadata.goog",
	"metadata.azure.com",
	"metadata.azure.internal",
	"instance-data",
	"instance-data.ec2.internal",
	"metadata.tencentyun.com",
	"metadata.platformequinix.com",
	"metadata.packet.net",
}

// classifyName refuses names that are special whatever they resolve to.
func classifyName(name string) Reason {
	for _, m := range metadataNames {
		if name == m || strings.HasSuffix(name, "."+m) {
			return Metadata
		}
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return Loopback
	}
	return Allowed
}

func lookup(table []rule, a netip.Addr) (Reason, bool) {
	for _, r := range table {
		if r.prefix.Contains(a) {
			return r.reason, true
		}
	}
	return "", false
}

// Classify returns the class of an address: [Allowed] for ordinary public
// unicast, otherwise the reason it is blocked. It ignores configuration; see
// [Guard.CheckAddr] for the decision with allow_private applied.
func Classify(a netip.Addr) Reason {
	a = a.WithZone("")
	if !a.IsValid() {
		return InvalidHost
	}
	if r, ok := lookup(metadataAddrs, a); ok {
		return r
	}
	if a.Is4() {
		if r, ok := lookup(v4Rules, a); ok {
			return r
		}
		return Allowed
	}
	if embedded, tunnel := embeddedIPv4(a); len(embedded) > 0 {
		for _, v4 := range embedded {
			if r := Classify(v4); r != Allowed {
				return r
			}
		}
		if tunnel {
			return IPv4Embedded
		}
		return Allowed
	}
	if r, ok := lookup(v6Rules, a); ok {
		return r
	}
	if !globalUnicast.Contains(a) {
		return Reserved
	}
	return Allowed
}

// embeddedIPv4 returns the IPv4 addresses an IPv6 address carries, and whether
// it is a tunnel/translation form (anything but IPv4-mapped).
func embeddedIPv4(a netip.Addr) (v4 []netip.Addr, tunnel bool) {
	b := a.As16()
	last32 := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	switch {
	case mapped.Contains(a):
		return []netip.Addr{last32}, false
	case a == netip.IPv6Unspecified() || a == netip.IPv6Loopback():
		return nil, false
	case compatible.Contains(a):
		return []netip.Addr{last32}, true
	case nat64.Contains(a), nat64Local.Contains(a):
		return []netip.Addr{last32}, true
	case sixToFour.Contains(a):
		return []netip.Addr{netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})}, true
	case teredo.Contains(a):
		server := netip.AddrFrom4([4]byte{b[4], b[5], b[6], b[7]})
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		return []netip.Addr{server, client}, true
	}
	return nil, false
}

// ClassifyHost is the guard's verdict on a host as written — an address in any spelling, or
// a name — without resolving anything: an address gets its [Classify] class, a metadata name
// [Metadata], localhost [Loopback], any other name [Allowed] (only a lookup could say more).
// The shell-risk classifier uses it on hosts it finds in commands.
func ClassifyHost(host string) (Reason, string) {
	h, a, err := ParseHost(host)
	if err != nil {
		return InvalidHost, ""
	}
	if a.IsValid() {
		return Classify(a), h
	}
	return classifyName(h), h
}
