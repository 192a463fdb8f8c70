package local

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/sandbox"
)

// derive turns the runtime's policy into the local backend's options: the kernel sandbox
// from the path policy (its roots, Airlock's own files protected, the deny_names commands
// must not see, in the section's sandbox mode) and [network] (see [deriveNetwork]).
func derive(section any, p backend.Policy) ([]any, error) {
	sec := section.(*Section)
	sb := SandboxConfig{
		Mode:       sandbox.Mode(sec.Sandbox),
		ReadRoots:  p.Paths.ReadRoots,
		WriteRoots: p.Paths.WriteRoots,
		Protected:  p.Paths.Protected,
		Hidden:     p.Paths.Hidden,
	}
	nc, err := deriveNetwork(p.Network, &sb)
	if err != nil {
		return nil, err
	}
	opts := []any{sb, nc}
	if probe := testProbe(); probe != nil {
		opts = append(opts, WithSandboxProbe(probe))
	}
	// AIRLOCK_TEST_NO_NAMESPACES plays a host that refuses the helper's namespaces; like the
	// probe above it can only make the sandbox weaker, and the notes say so.
	if why, ok := os.LookupEnv("AIRLOCK_TEST_NO_NAMESPACES"); ok {
		opts = append(opts, WithoutNamespaces("AIRLOCK_TEST_NO_NAMESPACES: "+why))
	}
	return opts, nil
}

// deriveNetwork applies [network] mode: none runs each command in a fresh network
// namespace (refused where the host cannot make one) on top of the kernel sandbox's "no
// TCP"; open lifts the sandbox's network rules and keeps the host's network; allowlist
// starts the egress proxy on 127.0.0.1 and lets the sandbox's Landlock rules allow TCP
// connect to that one port only (no UDP or raw sockets), with HTTP(S)_PROXY set — refused
// by the backend where Landlock is not enforced, never run weaker. A refusal lands on the
// receipt of the call whose command made the connection.
func deriveNetwork(n backend.NetworkPolicy, sb *SandboxConfig) (NetworkConfig, error) {
	switch n.Mode {
	case backend.NetworkOpen:
		sb.Network = sandbox.Network{Unrestricted: true}
		return NetworkConfig{Mode: NetworkHost}, nil
	case backend.NetworkAllowlist:
		if n.Proxy == nil {
			return NetworkConfig{}, errors.New(`[network] mode = "allowlist" without an egress proxy`)
		}
		eg, err := n.Proxy(context.Background(), netip.MustParseAddr("127.0.0.1"))
		if err != nil {
			return NetworkConfig{}, err
		}
		ap, err := netip.ParseAddrPort(strings.TrimPrefix(eg.URL, "http://"))
		if err != nil {
			return NetworkConfig{}, errors.Join(fmt.Errorf("egress proxy address %q: %w", eg.URL, err), eg.Stop())
		}
		sb.Network = sandbox.Network{ConnectTCP: []uint16{ap.Port()}}
		// One proxy port for every call: Landlock's rules are planned per generation, not
		// per call, so a port per call would cost a ruleset (and restricted threads) per
		// call. The call behind a refused connection is found instead from which command
		// holds its client socket (Attribute; see package sockowner).
		return NetworkConfig{Mode: NetworkHost, Env: proxyEnv(eg.URL), OnClose: eg.Stop, Attribute: eg.Attribute, ServeCall: eg.ServeCall}, nil
	}
	return NetworkConfig{Mode: NetworkNone}, nil
}

// proxyEnv points every common client at the egress proxy.
func proxyEnv(proxyURL string) map[string]string {
	env := map[string]string{"NO_PROXY": "", "no_proxy": ""}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"} {
		env[k] = proxyURL
	}
	return env
}

// testProbe lets a test play a kernel with another Landlock ABI (AIRLOCK_TEST_LANDLOCK_ABI=0:
// none). It can only make the sandbox weaker than the kernel allows, which in mode auto makes
// the approval gate stricter, and in mode landlock makes Airlock refuse to start; the
// result's notes say so either way.
func testProbe() sandbox.Probe {
	v, ok := os.LookupEnv("AIRLOCK_TEST_LANDLOCK_ABI")
	if !ok {
		return nil
	}
	abi, err := strconv.Atoi(v)
	if err != nil {
		abi = 0
	}
	return func() int { return min(abi, sandbox.KernelABI()) }
}
