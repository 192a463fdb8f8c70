package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/backend/sandbox"
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/receipt"
	"github.com/airlock-dev/airlock/urlguard"
)

// localNetwork applies [network] mode to the local backend: none runs each command in a
// fresh network namespace (refused where the host cannot make one) on top of the kernel
// sandbox's "no TCP"; open lifts the sandbox's network rules and keeps the host's network;
// allowlist starts an egress proxy on 127.0.0.1 and lets the sandbox's Landlock rules
// allow TCP connect to that one port only (no UDP or raw sockets), with HTTP(S)_PROXY set —
// refused by the backend where Landlock is not enforced, never run weaker.
func localNetwork(cfg *configs.Config, sb *local.SandboxConfig, session string, log hclog.Logger) (local.NetworkConfig, error) {
	switch cfg.Network.Mode {
	case urlguard.ModeOpen:
		sb.Network = sandbox.Network{Unrestricted: true}
		return local.NetworkConfig{Mode: local.NetworkHost}, nil
	case urlguard.ModeAllowlist:
		eg, err := egressProxy(cfg, session, log)(context.Background(), netip.MustParseAddr("127.0.0.1"))
		if err != nil {
			return local.NetworkConfig{}, err
		}
		ap, err := netip.ParseAddrPort(strings.TrimPrefix(eg.URL, "http://"))
		if err != nil {
			return local.NetworkConfig{}, errors.Join(fmt.Errorf("egress proxy address %q: %w", eg.URL, err), eg.Stop())
		}
		sb.Network = sandbox.Network{ConnectTCP: []uint16{ap.Port()}}
		// One proxy port for every call: Landlock's rules are fixed for the environment, so
		// per-call ports cannot be allowed; refusals name the session.
		return local.NetworkConfig{Mode: local.NetworkHost, Env: proxyEnv(eg.URL), OnClose: eg.Stop}, nil
	}
	return local.NetworkConfig{Mode: local.NetworkNone}, nil
}

// proxyEnv points every common client at the egress proxy.
func proxyEnv(proxyURL string) map[string]string {
	env := map[string]string{"NO_PROXY": "", "no_proxy": ""}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"} {
		env[k] = proxyURL
	}
	return env
}

// sshNetwork applies [network] mode to the SSH backend. The remote host's network is not
// Airlock's to cut: none and open run with it as it is, which Describe and the README say.
// allowlist would route commands through the egress proxy over a reverse-forwarded port;
// that is not built, so it is refused rather than run with the remote network open.
func sshNetwork(cfg *configs.Config) error {
	if cfg.Network.Mode == urlguard.ModeAllowlist {
		return errors.New(`ssh: [network] mode = "allowlist" is not supported on the ssh backend yet (the egress proxy over a reverse-forwarded port is not built); the remote host's network is not Airlock's to cut — use mode "none" or "open" (both leave it as it is) or the docker backend`)
	}
	return nil
}

// dockerNetwork applies [network] mode to a Docker environment: none keeps the container
// without network, open puts it on environment.docker.network (the default bridge when that
// is "none"), allowlist puts it on an internal network of its own whose only way out is an
// egress proxy on the host (see docker.WithEgressProxy). Allowlist containers are not
// reused: their network and proxy live as long as the session.
func dockerNetwork(cfg *configs.Config, c *docker.Config, session string, log hclog.Logger) ([]docker.Option, error) {
	switch cfg.Network.Mode {
	case urlguard.ModeOpen:
		if c.Network == "none" {
			c.Network = "bridge"
		}
		return nil, nil
	case urlguard.ModeAllowlist:
		c.ReuseContainer = false
		return []docker.Option{docker.WithEgressProxy(egressProxy(cfg, session, log))}, nil
	}
	return nil, nil
}

// egressProxy starts one proxy per environment, on the address given. Refusals go to the
// receipt ledger as network_denied events under the session and, when the command sent the
// per-call credentials its proxy URL carries, under its call (a second handle on the ledger
// file: appends are locked, so handles and processes share it safely).
func egressProxy(cfg *configs.Config, session string, log hclog.Logger) docker.EgressProxy {
	return func(ctx context.Context, listen netip.Addr) (docker.Egress, error) {
		g, err := urlguard.New(cfg.Network)
		if err != nil {
			return docker.Egress{}, err
		}
		ledger, err := receipt.Open(cfg.LedgerPath())
		if err != nil {
			return docker.Egress{}, fmt.Errorf("ledger.path: %w", err)
		}
		onDenied := func(d egress.Denial) {
			r := &receipt.Receipt{CallID: d.CallID, ToolName: "terminal", SessionID: session,
				Network: &receipt.NetworkDenial{Host: d.Host, Port: d.Port, Reason: string(d.Reason), Detail: d.Detail, By: "egress_proxy"}}
			if err := ledger.Append(receipt.EventNetworkDenied, r); err != nil {
				log.Error("ledger append failed", "event", receipt.EventNetworkDenied, "error", err)
			}
		}
		p, err := egress.New(g, egress.WithLogger(log), egress.WithOnDenied(onDenied), egress.WithSession(session))
		if err != nil {
			ledger.Close()
			return docker.Egress{}, err
		}
		ln, err := net.Listen("tcp", netip.AddrPortFrom(listen, 0).String())
		if err != nil {
			ledger.Close()
			return docker.Egress{}, fmt.Errorf("egress proxy: %w", err)
		}
		go func() {
			if err := p.Serve(ln); err != nil {
				log.Error("egress proxy stopped", "error", err)
			}
		}()
		addr := ln.Addr().String()
		return docker.Egress{
			URL:  "http://" + addr,
			Stop: func() error { return errors.Join(p.Close(), ledger.Close()) },
			// One port per call on the same address: the port names the call.
			ForCall: func(callID string) (string, func()) {
				cln, err := net.Listen("tcp", netip.AddrPortFrom(listen, 0).String())
				if err != nil {
					log.Warn("egress proxy: no port for the call; its refusals name only the session", "call_id", callID, "error", err)
					return "http://" + addr, func() {}
				}
				return "http://" + cln.Addr().String(), p.ServeCall(cln, callID)
			},
		}, nil
	}
}
