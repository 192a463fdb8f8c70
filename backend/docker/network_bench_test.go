package docker_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/docker"
	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/urlguard"
)

// BenchmarkAllowlistRequest times one small HTTP request made by a command inside a
// container (busybox wget, a new process and connection each), on three paths in the same
// run, reported as the metrics PATH_ns/req (ns/op is a whole round):
//
//   - direct: an open container on a network the benchmark creates, straight to the server
//     on that network's gateway — for scale;
//   - proxy_gateway: the same container through an egress proxy listening on the gateway —
//     the path of earlier versions' allowlist, whose internal network left the host's
//     services reachable;
//   - proxy_relay: an allowlist container (network "none") through the helper's loopback
//     relay and the call's unix socket to the proxy — the path now.
//
// proxy_relay − proxy_gateway is what the relay adds per request.
//
//	go test -run x -bench AllowlistRequest -benchtime 20x ./backend/docker/
func BenchmarkAllowlistRequest(b *testing.B) {
	netName, gw, _ := testNetwork(b)
	up := hostServer(b, netip.AddrPortFrom(gw, 0).String(), "ok")
	_, port, _ := net.SplitHostPort(up)
	g, err := urlguard.New(urlguard.Config{Mode: urlguard.ModeAllowlist, AllowDomains: []string{"up.test"}, AllowPrivate: true},
		urlguard.WithResolver(fixedNames{"up.test": gw.String()}))
	if err != nil {
		b.Fatal(err)
	}
	p, err := egress.New(g)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	gwln, err := net.Listen("tcp", netip.AddrPortFrom(gw, 0).String())
	if err != nil {
		b.Fatal(err)
	}
	go p.Serve(gwln)

	open := testConfig(b, b.TempDir(), docker.ModeHelper)
	open.ReuseContainer = false
	open.Network = netName
	oenv := newEnv(b, open)
	var listened netip.Addr
	aenv := allowlistEnv(b, proxyStarter(b, g, &denialLog{}, &listened), "")

	// Rounds interleave the paths (a batch of requests on each in turn), so that the load of
	// a shared machine falls on all three alike; each path's figure is the median over the
	// rounds of its batch's time per request. A batch is one command through the helper, so
	// each figure carries the same 1/batch share of an Exec.
	const batch = 20
	target := "http://up.test:" + port + "/"
	paths := []struct {
		name, proxy, target string
		env                 backend.Environment
	}{
		{"direct", "", "http://" + up + "/", oenv},
		{"proxy_gateway", "http://" + gwln.Addr().String(), target, oenv},
		{"proxy_relay", "", target, aenv},
	}
	per := make([][]float64, len(paths))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	b.ResetTimer()
	for range b.N {
		for i, pa := range paths {
			set := ""
			if pa.proxy != "" {
				set = "export http_proxy=" + pa.proxy + "; "
			}
			cmd := set + fmt.Sprintf(`i=0; while [ $i -lt %d ]; do wget -q -O /dev/null %s || exit 1; i=$((i+1)); done`, batch, pa.target)
			start := time.Now()
			res, err := pa.env.Exec(ctx, backend.Request{Command: cmd})
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("%s: %v %d %s", pa.name, err, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
			}
			per[i] = append(per[i], float64(time.Since(start).Nanoseconds())/batch)
		}
	}
	b.StopTimer()
	for i, pa := range paths {
		v := per[i]
		sort.Float64s(v)
		b.ReportMetric(v[len(v)/2], pa.name+"_ns/req")
	}
}
