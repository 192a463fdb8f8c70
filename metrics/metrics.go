package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/airlock-dev/airlock/schema"
)

// Config is the [metrics] table.
type Config struct {
	// Listen is the address the endpoint listens on ("127.0.0.1:9464"); empty is off.
	Listen string `toml:"listen"`
	// AllowNonLoopback lets Listen name an address other than loopback.
	AllowNonLoopback bool `toml:"allow_non_loopback"`
	// Path is where the metrics are served (default /metrics).
	Path string `toml:"path"`
}

// DefaultPath is the endpoint's path when the config names none.
const DefaultPath = "/metrics"

// FieldError is a [metrics] setting that cannot work: Field is its key.
type FieldError = schema.FieldError

func fieldError(field, msg string) *FieldError {
	return &FieldError{Section: "metrics", Field: field, Message: msg}
}

// Validate checks the table: Listen is host:port with a literal IP (or localhost), on
// loopback unless AllowNonLoopback; Path starts with a slash.
func (c Config) Validate() error {
	if c.Path != "" && (c.Path[0] != '/' || len(c.Path) > 256) {
		return fieldError("path", fmt.Sprintf("%q must start with / (at most 256 bytes)", c.Path))
	}
	if c.Listen == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return fieldError("listen", fmt.Sprintf("%q is not host:port (e.g. \"127.0.0.1:9464\")", c.Listen))
	}
	if _, err := netip.ParseAddrPort(net.JoinHostPort("0.0.0.0", port)); err != nil {
		return fieldError("listen", fmt.Sprintf("%q: port %q is not a number from 0 to 65535", c.Listen, port))
	}
	if host == "localhost" {
		return nil
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return fieldError("listen", fmt.Sprintf("%q: the host must be an IP address or localhost, got %q", c.Listen, host))
	}
	if !addr.Unmap().IsLoopback() && !c.AllowNonLoopback {
		what := "a non-loopback address"
		if addr.IsUnspecified() {
			what = "every interface"
		}
		return fieldError("listen", fmt.Sprintf("%q is %s; the endpoint has no authentication and lists tools and refused hosts, so it must be on loopback (127.0.0.1 or ::1) unless metrics.allow_non_loopback = true", c.Listen, what))
	}
	return nil
}

// Metrics holds Airlock's counters. A nil *Metrics counts nothing, so callers need no check.
type Metrics struct {
	reg *prometheus.Registry

	calls        *prometheus.CounterVec
	callDuration *prometheus.HistogramVec
	egress       *prometheus.CounterVec
	egressBytes  *prometheus.CounterVec
	denials      *prometheus.CounterVec
}

// New makes the counters, with the Go runtime's and the process's own collectors beside them.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "airlock", Name: "calls_total",
			Help: "Tool calls by tool, policy decision and outcome.",
		}, []string{"tool", "decision", "outcome"}),
		callDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "airlock", Name: "call_duration_seconds",
			Help:    "Time from a call's arrival to its result, by tool.",
			Buckets: []float64{.001, .005, .01, .05, .1, .5, 1, 5, 30, 120},
		}, []string{"tool"}),
		egress: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "airlock", Subsystem: "egress", Name: "requests_total",
			Help: "Requests to the egress proxy by decision (allowed, refused) and the URL guard's reason for a refusal.",
		}, []string{"decision", "reason"}),
		egressBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "airlock", Subsystem: "egress", Name: "bytes_total",
			Help: "Body and tunnel bytes the egress proxy carried, by direction (up: from commands; down: to them); a tunnel's are counted when it closes.",
		}, []string{"direction"}),
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "airlock", Subsystem: "egress", Name: "refusals_attributed_total",
			Help: "Egress proxy refusals by whether they were tied to a call (yes) or recorded for the session only (no).",
		}, []string{"attributed"}),
	}
	m.reg.MustRegister(m.calls, m.callDuration, m.egress, m.egressBytes, m.denials,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the registry the counters are in (for tests and exporters).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Call counts one finished call.
func (m *Metrics) Call(tool, decision, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(tool, decision, outcome).Inc()
	m.callDuration.WithLabelValues(tool).Observe(d.Seconds())
}

// Request counts one request the egress proxy decided; reason is the guard's code for a
// refusal. It makes *Metrics an egress.Observer.
func (m *Metrics) Request(allowed bool, reason string) {
	if m == nil {
		return
	}
	if allowed {
		m.egress.WithLabelValues("allowed", "").Inc()
		return
	}
	m.egress.WithLabelValues("refused", reason).Inc()
}

// Bytes counts bytes the egress proxy carried.
func (m *Metrics) Bytes(up, down int64) {
	if m == nil {
		return
	}
	if up > 0 {
		m.egressBytes.WithLabelValues("up").Add(float64(up))
	}
	if down > 0 {
		m.egressBytes.WithLabelValues("down").Add(float64(down))
	}
}

// Refusal counts whether a refusal was tied to a call.
func (m *Metrics) Refusal(attributed bool) {
	if m == nil {
		return
	}
	v := "no"
	if attributed {
		v = "yes"
	}
	m.denials.WithLabelValues(v).Inc()
}

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Server is a running endpoint.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Serve starts the endpoint configured by c (which must be valid and have Listen set).
func (m *Metrics) Serve(c Config) (*Server, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Listen == "" {
		return nil, fieldError("listen", "not set")
	}
	path := c.Path
	if path == "" {
		path = DefaultPath
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return nil, fieldError("listen", err.Error())
	}
	mux := http.NewServeMux()
	mux.Handle(path, m.Handler())
	s := &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address the endpoint listens on (the port chosen when Listen's was 0).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops the endpoint, waiting up to the context's deadline for scrapes in progress.
func (s *Server) Close(ctx context.Context) error {
	if err := s.srv.Shutdown(ctx); err != nil {
		return errors.Join(err, s.srv.Close())
	}
	return nil
}
