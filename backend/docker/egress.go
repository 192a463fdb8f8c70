package docker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/airlock-dev/airlock/backend"
)

// EgressProxy starts Airlock's egress proxy listening on listen — the host's address on the
// container's internal network, the only address the container can reach.
type EgressProxy = backend.EgressProxy

// Egress is a running egress proxy.
type Egress = backend.Egress

// WithEgressProxy puts the container on an internal Docker network of its own (Internal:
// true: no route out, not even to the host's other networks), created and labelled by
// Airlock and removed on Close or by gc, and points HTTP_PROXY and HTTPS_PROXY at the proxy
// that start runs on that network's gateway address. It serves `[network] mode =
// "allowlist"`: the proxy is the container's only way out.
//
// Measured with Debian's dockerd 20.10: a container on an internal network reaches the
// gateway address on the host (so a proxy listening there serves it), nothing beyond the
// subnet, and not the host's loopback. Any other host service listening on every address
// (0.0.0.0) is reachable through the gateway address too: bind host services to loopback.
func WithEgressProxy(start EgressProxy) Option {
	return func(o *options) error {
		if start == nil {
			return errors.New("docker: nil egress proxy")
		}
		o.egress = start
		return nil
	}
}

const labelNetwork = "dev.airlock.network" // "egress" on networks Airlock made for the proxy

// setupEgress creates the session's internal network, starts the proxy on its gateway and
// returns cfg changed to use both.
func (e *Env) setupEgress(ctx context.Context, cfg Config, start EgressProxy) (Config, error) {
	if cfg.ReuseContainer {
		return cfg, errors.New(`docker: [network] mode = "allowlist" cannot reuse a container (environment.docker.reuse_container = true): its internal network and proxy live as long as one session; set reuse_container = false`)
	}
	if cfg.Network != "none" {
		return cfg, fmt.Errorf(`docker: [network] mode = "allowlist" puts the container on an internal network of its own; environment.docker.network = %q conflicts with it (leave it "none")`, cfg.Network)
	}
	name := cfg.ContainerNamePrefix + "net-" + e.session
	host, _ := os.Hostname()
	labels := map[string]string{
		labelOwner:    ownerValue,
		labelSession:  e.session,
		labelNetwork:  "egress",
		labelPID:      strconv.Itoa(os.Getpid()),
		labelPIDStart: processStart(os.Getpid()),
		labelHostname: host,
	}
	cctx, cancel := context.WithTimeout(ctx, apiTimeout)
	resp, err := e.cli.NetworkCreate(cctx, name, network.CreateOptions{Driver: "bridge", Internal: true, Labels: labels})
	cancel()
	if err != nil {
		if client.IsErrConnectionFailed(err) {
			return cfg, e.unreachable(err)
		}
		return cfg, fmt.Errorf("docker: create internal network %s: %w", name, err)
	}
	e.egressNet = resp.ID
	ictx, cancel := context.WithTimeout(ctx, apiTimeout)
	info, err := e.cli.NetworkInspect(ictx, resp.ID, network.InspectOptions{})
	cancel()
	if err != nil {
		return cfg, fmt.Errorf("docker: inspect internal network %s: %w", name, err)
	}
	var gw netip.Addr
	for _, c := range info.IPAM.Config {
		if a, err := netip.ParseAddr(c.Gateway); err == nil && a.Is4() {
			gw = a
			break
		}
	}
	if !gw.IsValid() {
		return cfg, fmt.Errorf("docker: internal network %s has no IPv4 gateway for the egress proxy to listen on", name)
	}
	eg, err := start(ctx, gw)
	if err != nil {
		return cfg, fmt.Errorf("docker: start the egress proxy on %s: %w", gw, err)
	}
	proxyURL := eg.URL
	e.egressStop, e.egressURL, e.egressForCall = eg.Stop, proxyURL, eg.ForCall
	cfg.Network = name
	cfg.Env = maps.Clone(cfg.Env)
	if cfg.Env == nil {
		cfg.Env = map[string]string{}
	}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"} {
		cfg.Env[k] = proxyURL
	}
	cfg.Env["NO_PROXY"], cfg.Env["no_proxy"] = "", ""
	e.log.Debug("egress proxy ready", "network", name, "proxy", proxyURL)
	return cfg, nil
}

// teardownEgress stops the proxy and removes the internal network (after the container).
func (e *Env) teardownEgress(ctx context.Context) error {
	var errs []error
	if e.egressStop != nil {
		if err := e.egressStop(); err != nil {
			errs = append(errs, fmt.Errorf("docker: stop egress proxy: %w", err))
		}
		e.egressStop = nil
	}
	if e.egressNet != "" {
		if err := removeNetwork(ctx, e.cli, e.egressNet); err != nil {
			errs = append(errs, err)
		}
		e.egressNet = ""
	}
	return errors.Join(errs...)
}

func removeNetwork(ctx context.Context, cli *client.Client, id string) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, apiTimeout)
		err = cli.NetworkRemove(rctx, id)
		cancel()
		if err == nil || cerrdefs.IsNotFound(err) {
			return nil
		}
		// The daemon may still be detaching a container that was just removed.
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: remove network %s: %w", shortID(id), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("docker: remove network %s: %w", shortID(id), err)
}

// gcNetworks removes egress networks whose session ended (its process is gone) or, with
// All, every one; networks still holding a container are left for the next run.
func gcNetworks(ctx context.Context, cli *client.Client, opts GCOptions, hostname string) []GCItem {
	lctx, cancel := context.WithTimeout(ctx, apiTimeout)
	list, err := cli.NetworkList(lctx, network.ListOptions{Filters: filters.NewArgs(
		filters.Arg("label", labelOwner+"="+ownerValue), filters.Arg("label", labelNetwork))})
	cancel()
	if err != nil {
		return []GCItem{{Name: "networks", Err: fmt.Errorf("docker: list networks: %w", err)}}
	}
	var items []GCItem
	for _, n := range list {
		if len(opts.NamePrefix) > 0 && (len(n.Name) < len(opts.NamePrefix) || n.Name[:len(opts.NamePrefix)] != opts.NamePrefix) {
			continue
		}
		reason := ""
		switch l := n.Labels; {
		case opts.All:
			reason = "--all"
		case l[labelHostname] == hostname:
			if pid, err := strconv.Atoi(l[labelPID]); err == nil && !processAlive(pid, l[labelPIDStart]) {
				reason = "its session ended (process " + l[labelPID] + " is gone)"
			}
		}
		if reason == "" || opts.Now.Sub(n.Created) < opts.MinAge && !opts.All {
			continue
		}
		it := GCItem{ID: n.ID, Name: n.Name, Reason: "network: " + reason}
		if !opts.DryRun {
			it.Err = removeNetwork(ctx, cli, n.ID)
			it.Removed = it.Err == nil
		}
		items = append(items, it)
	}
	return items
}

// ProxyVars are the variables that point clients at a proxy.
var ProxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"}

// callProxyEnv returns the request's variables with the proxy URL naming the call, and the
// function that ends its validity. Without a call or a proxy it returns them unchanged.
func (e *Env) callProxyEnv(ctx context.Context, env map[string]string) (map[string]string, func()) {
	id := backend.CallFrom(ctx)
	if e.egressForCall == nil || id == "" {
		return env, func() {}
	}
	u, release := e.egressForCall(id)
	out := maps.Clone(env)
	if out == nil {
		out = map[string]string{}
	}
	for _, k := range ProxyVars {
		out[k] = u
	}
	return out, release
}
