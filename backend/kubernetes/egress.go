package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/airlock-dev/airlock/backend"
)

// WithEgressProxy serves `[network] mode = "allowlist"`: the pod's NetworkPolicy denies all
// egress, as in mode none, and Airlock's egress proxy is its only way out. Nothing of the
// cluster's network reaches the proxy: each command's connections to the port its proxy
// variables name are carried by the resident helper back over the session's exec stream
// (backend/helper's tunnels) and answered on Airlock's side by the proxy as the command's
// call. So no address of Airlock's host is opened to the cluster, and a refusal names the
// call. The helper is required: without it allowlist is refused with the reason.
func WithEgressProxy(start backend.EgressProxy) Option {
	return func(o *options) error {
		if start == nil {
			return errors.New("kubernetes: nil egress proxy")
		}
		o.egress = start
		return nil
	}
}

// deniesEgress reports whether the pod's NetworkPolicy denies all egress: in mode none, and
// in mode allowlist, whose way out is the helper's stream.
func (c Config) deniesEgress() bool {
	return c.Network == backend.NetworkNone || c.Network == backend.NetworkAllowlist
}

// startEgress starts the egress proxy of an allowlist environment, on the host's loopback:
// its own port is not how commands reach it (see [WithEgressProxy]).
func (e *Env) startEgress(ctx context.Context, start backend.EgressProxy) error {
	const mode = `kubernetes: [network] mode = "allowlist"`
	switch {
	case start == nil:
		return errors.New(mode + ` without an egress proxy`)
	case e.helper == nil:
		return fmt.Errorf(mode+` needs the resident helper, which carries the pod's only way out to the egress proxy, and it cannot run here: %s (fix environment.kubernetes.helper_binary, or choose [network] mode = "none" or "open")`, e.helperProblem)
	}
	eg, err := start(ctx, netip.AddrFrom4([4]byte{127, 0, 0, 1}))
	if err != nil {
		return fmt.Errorf("kubernetes: start the egress proxy: %w", err)
	}
	if eg.ServeCall == nil {
		if eg.Stop != nil {
			_ = eg.Stop()
		}
		return errors.New("kubernetes: the egress proxy cannot answer on the helper's tunnels (it has no ServeCall)")
	}
	e.egressStop, e.egressServe = eg.Stop, eg.ServeCall
	return nil
}

// callEgress is what a command's request carries for its connections: nil without
// allowlist, else the call's listener handed to the proxy.
func (e *Env) callEgress(ctx context.Context) func(net.Listener) func() {
	if e.egressServe == nil {
		return nil
	}
	call := backend.CallFrom(ctx)
	return func(ln net.Listener) func() { return e.egressServe(ln, call) }
}

// stopEgress stops the proxy, once.
func (e *Env) stopEgress() error {
	if e.egressStop == nil {
		return nil
	}
	stop := e.egressStop
	e.egressStop = nil
	return stop()
}
