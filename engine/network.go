package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/receipt"
	"github.com/airlock-dev/airlock/urlguard"
)

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

// egressProxy starts one proxy per environment, on the address Docker gives it. Refusals
// go to the receipt ledger as network_denied events under the session (a second handle on
// the ledger file: appends are locked, so handles and processes share it safely).
func egressProxy(cfg *configs.Config, session string, log hclog.Logger) docker.EgressProxy {
	return func(ctx context.Context, listen netip.Addr) (string, func() error, error) {
		g, err := urlguard.New(cfg.Network)
		if err != nil {
			return "", nil, err
		}
		ledger, err := receipt.Open(cfg.LedgerPath())
		if err != nil {
			return "", nil, fmt.Errorf("ledger.path: %w", err)
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
			return "", nil, err
		}
		ln, err := net.Listen("tcp", netip.AddrPortFrom(listen, 0).String())
		if err != nil {
			ledger.Close()
			return "", nil, fmt.Errorf("egress proxy: %w", err)
		}
		go func() {
			if err := p.Serve(ln); err != nil {
				log.Error("egress proxy stopped", "error", err)
			}
		}()
		return "http://" + ln.Addr().String(), func() error { return errors.Join(p.Close(), ledger.Close()) }, nil
	}
}
