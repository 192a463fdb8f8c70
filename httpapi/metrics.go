package httpapi

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// serveMetrics is GET /metrics: the runtime's counters (calls by tool, decision and
// outcome; call durations; egress) and the server's gauges, in Prometheus's text format.
// It needs a token like every route but health: tool names and counts tell what agents
// are doing.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if s.metrics == nil {
		writeError(w, http.StatusNotFound, CodeNotFound,
			"this runtime counts no metrics; airlock serve builds it with engine.WithMetrics")
		return
	}
	s.metrics.ServeHTTP(w, r)
}

// registerGauges adds the server's own gauges to the runtime's registry: sessions open by
// kind and calls waiting for a person. They are read at scrape time, so they cannot drift.
func (s *Server) registerGauges(reg *prometheus.Registry) error {
	for _, kind := range []string{KindAPI, KindMCP} {
		g := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "airlock", Subsystem: "serve", Name: "sessions_open",
			Help:        "Sessions open on the HTTP front end, by kind (api: POST /v1/sessions; mcp: /mcp).",
			ConstLabels: prometheus.Labels{"kind": kind},
		}, func() float64 { return float64(s.countSessions(kind)) })
		if err := reg.Register(g); err != nil {
			return err
		}
	}
	return reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "airlock", Subsystem: "serve", Name: "approvals_pending",
		Help: "Calls of the server's sessions waiting for a person now.",
	}, func() float64 { return float64(s.countPending()) }))
}

func (s *Server) countSessions(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.sessions {
		if e.kind == kind {
			n++
		}
	}
	return n
}

func (s *Server) countPending() int {
	s.mu.Lock()
	all := make([]*entry, 0, len(s.sessions))
	for _, e := range s.sessions {
		all = append(all, e)
	}
	s.mu.Unlock()
	n := 0
	for _, e := range all {
		n += len(e.sess.Pending())
	}
	return n
}
