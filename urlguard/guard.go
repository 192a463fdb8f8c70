package urlguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Mode is how much network the configuration grants.
type Mode string

const (
	ModeNone      Mode = "none"      // no network at all (the default)
	ModeAllowlist Mode = "allowlist" // only hosts matching allow_domains
	ModeOpen      Mode = "open"      // any public address
)

// Config is the `[network]` section as the guard needs it.
type Config struct {
	Mode Mode `toml:"mode" json:"mode"`
	// AllowDomains and DenyDomains are host patterns: an exact name
	// ("example.com") or "*." and a name ("*.example.com", any name below
	// it, not the name itself). deny_domains wins over allow_domains.
	AllowDomains []string `toml:"allow_domains" json:"allow_domains"`
	DenyDomains  []string `toml:"deny_domains" json:"deny_domains"`
	// AllowPrivate lets private (RFC 1918), CGNAT and unique-local
	// addresses through. Loopback, link-local and metadata stay blocked.
	AllowPrivate bool `toml:"allow_private" json:"allow_private"`
}

// DefaultConfig is no network: mode "none", no domains, private addresses
// blocked.
func DefaultConfig() Config { return Config{Mode: ModeNone} }

// Validate checks what a schema cannot: the mode and every pattern.
func (c Config) Validate() error {
	switch c.Mode {
	case ModeNone, ModeAllowlist, ModeOpen:
	default:
		return fmt.Errorf("network.mode: %q is not one of none, allowlist, open", c.Mode)
	}
	for _, l := range []struct {
		field string
		list  []string
	}{{"allow_domains", c.AllowDomains}, {"deny_domains", c.DenyDomains}} {
		for i, p := range l.list {
			if _, err := compilePattern(p); err != nil {
				return fmt.Errorf("network.%s[%d]: %w", l.field, i, err)
			}
		}
	}
	return nil
}

type pattern struct {
	name     string
	wildcard bool // "*.name": any name strictly below name
}

func compilePattern(p string) (pattern, error) {
	wild := strings.HasPrefix(p, "*.")
	rest := strings.TrimPrefix(p, "*.")
	if strings.Contains(rest, "*") {
		return pattern{}, fmt.Errorf("%q: only a leading \"*.\" is supported", p)
	}
	host, addr, err := ParseHost(rest)
	if err != nil {
		return pattern{}, fmt.Errorf("%q: %w", p, err)
	}
	if wild && addr.IsValid() {
		return pattern{}, fmt.Errorf("%q: a wildcard needs a domain name", p)
	}
	return pattern{name: host, wildcard: wild}, nil
}

func (p pattern) match(host string) bool {
	if p.wildcard {
		return strings.HasSuffix(host, "."+p.name)
	}
	return host == p.name
}

// Resolver looks names up. *net.Resolver satisfies it; tests pass their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Guard decides on URLs, hosts and addresses under one [Config].
type Guard struct {
	mode          Mode
	allow, deny   []pattern
	allowPrivate  bool
	allowLoopback bool
	resolver      Resolver
}

// Option configures a Guard.
type Option func(*Guard) error

// WithResolver sets the resolver names are looked up with (default
// net.DefaultResolver).
func WithResolver(r Resolver) Option {
	return func(g *Guard) error {
		if r == nil {
			return errors.New("urlguard: nil resolver")
		}
		g.resolver = r
		return nil
	}
}

// AllowLoopbackForTesting lets loopback addresses through (and with them the
// name localhost). It exists so that tests can point the guarded code at an
// httptest server on 127.0.0.1; no configuration key reaches it and nothing
// in Airlock's own wiring sets it.
func AllowLoopbackForTesting() Option {
	return func(g *Guard) error { g.allowLoopback = true; return nil }
}

// New builds a Guard from a validated config.
func New(cfg Config, opts ...Option) (*Guard, error) {
	if cfg.Mode == "" {
		cfg.Mode = ModeNone
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Guard{mode: cfg.Mode, allowPrivate: cfg.AllowPrivate, resolver: net.DefaultResolver}
	for _, p := range cfg.AllowDomains {
		c, _ := compilePattern(p)
		g.allow = append(g.allow, c)
	}
	for _, p := range cfg.DenyDomains {
		c, _ := compilePattern(p)
		g.deny = append(g.deny, c)
	}
	for _, o := range opts {
		if err := o(g); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// Mode reports the configured mode.
func (g *Guard) Mode() Mode { return g.mode }

// Decision is the guard's answer for one destination.
type Decision struct {
	Allowed bool   `json:"allowed"`
	Reason  Reason `json:"reason"`
	// Detail says more for a person (which address, which pattern).
	Detail string `json:"detail,omitempty"`
	// Target is the parsed destination (zero when parsing failed).
	Target Target `json:"-"`
	// Addrs are the addresses the host stands for: the literal, or every
	// answer of the lookup. Addr is the one that decided a refusal.
	Addrs []netip.Addr `json:"addrs,omitempty"`
	Addr  netip.Addr   `json:"-"`
}

// Err returns nil for an allowed decision, else a *DeniedError.
func (d Decision) Err() error {
	if d.Allowed {
		return nil
	}
	return &DeniedError{Reason: d.Reason, Host: d.Target.Host, Port: d.Target.Port, Addr: d.Addr, Detail: d.Detail}
}

// DeniedError is a refusal; errors.As it to read the reason.
type DeniedError struct {
	Reason Reason
	Host   string
	Port   int
	Addr   netip.Addr
	Detail string
}

func (e *DeniedError) Error() string {
	var b strings.Builder
	b.WriteString("urlguard: refused")
	if e.Host != "" {
		fmt.Fprintf(&b, " %s", e.Host)
		if e.Port != 0 {
			fmt.Fprintf(&b, " port %d", e.Port)
		}
	}
	if e.Addr.IsValid() && e.Addr.String() != e.Host {
		fmt.Fprintf(&b, " (%s)", e.Addr)
	}
	fmt.Fprintf(&b, ": %s (%s)", e.Reason, e.Reason.Describe())
	if e.Detail != "" {
		fmt.Fprintf(&b, ": %s", e.Detail)
	}
	return b.String()
}

func refuse(t Target, r Reason, detail string) Decision {
	return Decision{Reason: r, Detail: detail, Target: t}
}

// CheckURL parses raw as a browser would (see [Parse]) and decides on it.
func (g *Guard) CheckURL(ctx context.Context, raw string) Decision {
	t, err := Parse(raw)
	if err != nil {
		return refuseParse(err)
	}
	return g.check(ctx, t)
}

// CheckHost decides on a host (a name or an address in any spelling, IPv6
// with or without brackets) and port, as found on a command line.
func (g *Guard) CheckHost(ctx context.Context, host string, port int) Decision {
	h, a, err := ParseHost(host)
	if err != nil {
		return refuseParse(err)
	}
	t := Target{Host: h, Addr: a, Port: port, RequestURI: "/"}
	if port < 0 || port > 65535 {
		return refuse(t, InvalidPort, "port out of range")
	}
	return g.check(ctx, t)
}

func refuseParse(err error) Decision {
	var pe *ParseError
	if errors.As(err, &pe) {
		return Decision{Reason: pe.Reason, Detail: pe.Detail}
	}
	return Decision{Reason: InvalidURL, Detail: err.Error()}
}

// check applies the rules in a fixed order: what the host is (metadata names
// and addresses first, so the most telling reason wins), deny_domains, the
// mode and allow_domains, then every address the name resolves to.
func (g *Guard) check(ctx context.Context, t Target) Decision {
	if d, refused := g.checkLiteral(t); refused {
		return d
	}
	if d, refused := g.checkDomains(t); refused {
		return d
	}
	if t.IsIP() {
		return Decision{Allowed: true, Reason: Allowed, Target: t, Addrs: []netip.Addr{t.Addr}}
	}
	addrs, err := g.resolver.LookupNetIP(ctx, "ip", t.Host)
	if err != nil || len(addrs) == 0 {
		detail := "no addresses"
		if err != nil {
			detail = err.Error()
		}
		return refuse(t, Unresolvable, detail)
	}
	for _, a := range addrs {
		if r := g.CheckAddr(a); r != Allowed {
			d := refuse(t, r, t.Host+" resolves to "+a.String())
			d.Addr, d.Addrs = a, addrs
			return d
		}
	}
	return Decision{Allowed: true, Reason: Allowed, Target: t, Addrs: addrs}
}

// checkLiteral refuses what the host is, before any lookup: a blocked address literal, or a
// name that is special whatever it resolves to (metadata names, localhost).
func (g *Guard) checkLiteral(t Target) (Decision, bool) {
	if t.IsIP() {
		if r := g.CheckAddr(t.Addr); r != Allowed {
			d := refuse(t, r, "address "+t.Addr.String())
			d.Addr, d.Addrs = t.Addr, []netip.Addr{t.Addr}
			return d, true
		}
		return Decision{}, false
	}
	if r := classifyName(t.Host); r != Allowed && !(r == Loopback && g.allowLoopback) {
		return refuse(t, r, "name "+t.Host), true
	}
	return Decision{}, false
}

// checkDomains applies deny_domains, the mode and allow_domains to the host
// name (an address literal is matched in its canonical form).
func (g *Guard) checkDomains(t Target) (Decision, bool) {
	for _, p := range g.deny {
		if p.match(t.Host) {
			return refuse(t, DeniedDomain, "matches "+p.String()), true
		}
	}
	switch g.mode {
	case ModeNone:
		return refuse(t, NetworkDisabled, ""), true
	case ModeAllowlist:
		for _, p := range g.allow {
			if p.match(t.Host) {
				return Decision{}, false
			}
		}
		return refuse(t, NotAllowlisted, t.Host), true
	}
	return Decision{}, false
}

func (p pattern) String() string {
	if p.wildcard {
		return "*." + p.name
	}
	return p.name
}

// AllowsHost says whether a host passes the rules that need no lookup: what
// the host is (an address literal's class, metadata names, localhost),
// deny_domains, the mode and allow_domains. The egress proxy uses it to refuse a
// request without resolving anything.
func (g *Guard) AllowsHost(host string) Decision {
	h, a, err := ParseHost(host)
	if err != nil {
		return refuseParse(err)
	}
	t := Target{Host: h, Addr: a}
	if d, refused := g.checkLiteral(t); refused {
		return d
	}
	if d, refused := g.checkDomains(t); refused {
		return d
	}
	return Decision{Allowed: true, Reason: Allowed, Target: t}
}

// CheckAddr is [Classify] with the configuration applied: allow_private
// lets private, CGNAT and unique-local addresses through; metadata,
// loopback and link-local stay blocked.
func (g *Guard) CheckAddr(a netip.Addr) Reason {
	r := Classify(a)
	switch r {
	case Private, CGNAT, UniqueLocal:
		if g.allowPrivate {
			return Allowed
		}
	case Loopback:
		if g.allowLoopback {
			return Allowed
		}
	}
	return r
}
