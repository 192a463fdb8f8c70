package backend

import (
	"context"
	"net"
	"net/netip"

	"github.com/hashicorp/go-hclog"
)

// Policy is what the runtime knows from the config's sections other than the backend's own
// — the path policy, [network], the session — in a form no backend has to import the
// runtime or the config package for. A backend's [Record.Derive] turns it into what that
// backend enforces (a kernel sandbox from the roots, a container network from the mode).
type Policy struct {
	Paths   PathPolicy
	Network NetworkPolicy
	// Session is the runtime session the environment is for, "" for one shared by all.
	Session string
	// Private is true when the runtime serves several callers (airlock serve): the
	// environment must be the session's alone, never one the backend keeps for every
	// session of the same configuration.
	Private bool
	Logger  hclog.Logger
}

// PathPolicy is the config's path policy as host paths.
type PathPolicy struct {
	// ReadRoots and WriteRoots are absolute host paths (never empty: the workspace when
	// the config names none). Every write root is also a read root.
	ReadRoots, WriteRoots []string
	// ConfiguredReadRoots and ConfiguredWriteRoots are the roots as [policy] names them
	// (never empty): relative to the workspace, or absolute as the environment sees them.
	// A backend whose workspace is not the host directory (ssh) places them in its own.
	ConfiguredReadRoots, ConfiguredWriteRoots []string
	// Protected are Airlock's own files (the config in use, the ledger, session and
	// approval state): no command may read or write them.
	Protected []string
	// Hidden reports whether a path relative to a root (slash-separated) matches one of the
	// deny_names that bind commands too, not only the file tools.
	Hidden func(rel string) bool
}

// NetworkMode is how much network [network] mode grants commands.
type NetworkMode string

const (
	NetworkNone      NetworkMode = "none"      // no network at all (the default)
	NetworkOpen      NetworkMode = "open"      // any address
	NetworkAllowlist NetworkMode = "allowlist" // only through the egress proxy
)

// NetworkPolicy is [network] for a backend.
type NetworkPolicy struct {
	Mode NetworkMode
	// Proxy starts the egress proxy (set in mode allowlist): the backend calls it with the
	// address its commands can reach the host on and points them at the URL it returns.
	Proxy EgressProxy
}

// EgressProxy starts Airlock's egress proxy listening on listen — an address the backend's
// commands can reach and nothing else can be reached through.
type EgressProxy func(ctx context.Context, listen netip.Addr) (Egress, error)

// Egress is a running egress proxy.
type Egress struct {
	// URL is the proxy URL commands are given (http://ip:port).
	URL string
	// Stop stops the proxy.
	Stop func() error
	// ServeCall, when set, answers on ln — a listener the backend made, such as a unix
	// socket it hands one call's commands — as callID's until release: every refusal of a
	// request that arrives there names that call ("" for a command that runs for no call,
	// whose refusals are the session's, unattributed).
	ServeCall func(ln net.Listener, callID string) (release func())
	// Attribute, when set, makes refusals of requests that arrive at URL name the call owner
	// finds behind each connection (the local backend, whose commands may reach one fixed
	// port only, tells calls apart by which command holds the socket).
	Attribute func(owner ConnOwner)
	// Serve, when set, answers on ln — a listener the backend made, such as a port an SSH
	// server forwards back — naming the call of each refused request with owner, until
	// release.
	Serve func(ln net.Listener, owner ConnOwner) (release func())
}

// ConnOwner names the call whose command holds the client end of a TCP connection to the
// egress proxy: client and server are the connection as the command sees it. An error says
// why it cannot be told; the refusal is then recorded for the session, unattributed.
type ConnOwner func(client, server netip.AddrPort) (callID string, err error)
