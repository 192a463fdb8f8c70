package engine

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/airlock-dev/airlock/metrics"
	"github.com/airlock-dev/airlock/pipeline"
)

// WithMetricsEndpoint is for long-running front ends (airlock mcp): when [metrics] names a
// listen address, the engine counts calls and egress decisions and serves them there until
// Close. A listener that cannot be opened fails New with an error naming metrics.listen.
// Without it — short-lived commands — nothing is served.
func WithMetricsEndpoint() Option {
	return func(o *options) error {
		o.serveMetrics = true
		return nil
	}
}

// WithMetrics makes the engine count calls (and egress decisions) whether or not [metrics]
// names a listen address: for a front end that serves [Engine.Metrics] itself (airlock
// serve, at /metrics behind its token).
func WithMetrics() Option {
	return func(o *options) error {
		o.countMetrics = true
		return nil
	}
}

// Metrics returns the engine's counters, nil unless [WithMetrics] or [WithMetricsEndpoint]
// with a listen address asked for them.
func (e *Engine) Metrics() *metrics.Metrics { return e.metrics }

// startMetrics makes the counters and opens the endpoint, when asked for and configured.
func (e *Engine) startMetrics() error {
	serve := e.opts.serveMetrics && e.cfg.Metrics.Listen != ""
	if !serve && !e.opts.countMetrics {
		return nil
	}
	m := metrics.New()
	e.metrics = m
	if !serve {
		return nil
	}
	srv, err := m.Serve(e.cfg.Metrics)
	if err != nil {
		return fmt.Errorf("metrics endpoint: %w", err)
	}
	e.metricsSrv = srv
	e.log.Info("metrics endpoint listening", "address", srv.Addr().String())
	return nil
}

func (e *Engine) stopMetrics(ctx context.Context) error {
	if e.metricsSrv == nil {
		return nil
	}
	ctx, cancel := cleanupContext(ctx)
	defer cancel()
	return e.metricsSrv.Close(ctx)
}

// MetricsAddr is the address the metrics endpoint listens on, nil when none is served.
func (e *Engine) MetricsAddr() net.Addr {
	if e.metricsSrv == nil {
		return nil
	}
	return e.metricsSrv.Addr()
}

// countCall counts a finished call by tool, decision and outcome. A name the registry does
// not know is counted as "unknown": the model chooses names, and each label value is a
// series the endpoint keeps for good.
func (e *Engine) countCall(r pipeline.Result) {
	if e.metrics == nil {
		return
	}
	tool := r.ToolName
	if _, ok := e.reg.Lookup(tool); !ok {
		tool = "unknown"
	}
	var decision, outcome string
	var d time.Duration
	if rc := r.Receipt; rc != nil {
		decision, outcome = rc.Decision, string(rc.Outcome)
		if rc.FinishedAt != nil {
			d = rc.FinishedAt.Sub(rc.ReceivedAt)
		}
	}
	e.metrics.Call(tool, decision, outcome, d)
}
