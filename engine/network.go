package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/metrics"
	"github.com/airlock-dev/airlock/receipt"
	"github.com/airlock-dev/airlock/urlguard"
)

// egressProxy starts one proxy per environment, on the address given. Refusals go to the
// receipt ledger as network_denied events under the session and under the call the backend
// names — by the listener the call was given (ServeCall: Docker's per-call socket), or by
// which command holds the connection (Attribute, Serve: local, SSH); one it cannot name is
// marked unattributed, never guessed. The ledger is a second handle on the file: appends are locked, so handles and
// processes share it safely.
func egressProxy(cfg *configs.Config, session string, log hclog.Logger, m *metrics.Metrics) backend.EgressProxy {
	return func(ctx context.Context, listen netip.Addr) (backend.Egress, error) {
		g, err := urlguard.New(cfg.Network)
		if err != nil {
			return backend.Egress{}, err
		}
		ledger, err := receipt.Open(cfg.LedgerPath())
		if err != nil {
			return backend.Egress{}, fmt.Errorf("ledger.path: %w", err)
		}
		onDenied := func(d egress.Denial) {
			r := &receipt.Receipt{CallID: d.CallID, ToolName: "terminal", SessionID: session,
				Network: &receipt.NetworkDenial{Host: d.Host, Port: d.Port, Reason: string(d.Reason), Detail: d.Detail, By: "egress_proxy", Unattributed: d.Unattributed}}
			if err := ledger.Append(receipt.EventNetworkDenied, r); err != nil {
				log.Error("ledger append failed", "event", receipt.EventNetworkDenied, "error", err)
			}
			m.Refusal(d.CallID != "")
		}
		opts := []egress.Option{egress.WithLogger(log), egress.WithOnDenied(onDenied), egress.WithSession(session)}
		if m != nil {
			opts = append(opts, egress.WithObserver(m))
		}
		p, err := egress.New(g, opts...)
		if err != nil {
			ledger.Close()
			return backend.Egress{}, err
		}
		ln, err := net.Listen("tcp", netip.AddrPortFrom(listen, 0).String())
		if err != nil {
			ledger.Close()
			return backend.Egress{}, fmt.Errorf("egress proxy: %w", err)
		}
		go func() {
			if err := p.Serve(ln); err != nil {
				log.Error("egress proxy stopped", "error", err)
			}
		}()
		addr := ln.Addr().String()
		return backend.Egress{
			URL:       "http://" + addr,
			Stop:      func() error { return errors.Join(p.Close(), ledger.Close()) },
			ServeCall: p.ServeCall,
			Attribute: func(owner backend.ConnOwner) { p.SetOwner(egress.Owner(owner)) },
			Serve: func(ln net.Listener, owner backend.ConnOwner) func() {
				return p.ServeOwned(ln, egress.Owner(owner))
			},
		}, nil
	}
}
