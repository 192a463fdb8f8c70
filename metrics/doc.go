// Package metrics is Airlock's Prometheus metrics: the counters the runtime keeps about
// calls and the egress proxy, and the HTTP endpoint a long-running front end (airlock mcp)
// serves them on when `[metrics] listen` is set.
//
// It uses github.com/prometheus/client_golang, the reference client: its text exposition
// is what every scraper reads, and its counters are single atomic adds, so counting costs a
// call nothing whether the endpoint is on or not. Each [Metrics] has a registry of its own
// (never the global default), so tests and several runtimes in one process do not mix.
//
// The endpoint listens on loopback unless `allow_non_loopback = true`: the counters name
// tools and the reasons hosts were refused, which is not for the network to read, and the
// endpoint has no authentication of its own.
package metrics
