package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/receipt"
)

type approveAll struct{}

func (approveAll) Ask(context.Context, approval.Prompt) (approval.Answer, error) {
	return approval.Answer{Choice: approval.Once, By: "test"}, nil
}

// TestMetricsEndpointCountsARefusal: with [network] mode allowlist on the local backend and
// [metrics] on loopback, a terminal call whose command asks the egress proxy for a host the
// allowlist does not name gets 403; the refusal is a network_denied event on that call's
// receipt, and a scrape of the endpoint shows it counted (by reason, as attributed) with
// the call itself. The refused name is judged by the allowlist alone: no lookup, no traffic.
func TestMetricsEndpointCountsARefusal(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	cfg := newConfig(t, `[network]
mode = "allowlist"
allow_domains = ["allowed.test"]
[metrics]
listen = "127.0.0.1:0"
`)
	e, err := engine.New(context.Background(), cfg, engine.WithMetricsEndpoint(), engine.WithApprover(approveAll{}))
	if err != nil {
		if strings.Contains(err.Error(), "Landlock") || strings.Contains(err.Error(), "sandbox") {
			t.Skipf("allowlist not deliverable here: %v", err)
		}
		t.Fatal(err)
	}
	defer e.Close(context.Background())
	if e.MetricsAddr() == nil {
		t.Fatal("no metrics endpoint")
	}
	s := openSession(t, e, "")
	c := call("terminal", map[string]any{"command": "curl -sS -m 10 -w ' code=%{http_code}' http://denied.test/"})
	c.ID = "call-metrics-1"
	res := s.Run(context.Background(), c)
	if res.Status != pipeline.StatusOK || !strings.Contains(res.Content, "code=403") {
		t.Fatalf("result %+v", res)
	}

	resp, err := http.Get("http://" + e.MetricsAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`airlock_egress_requests_total{decision="refused",reason="not_allowlisted"} 1`,
		`airlock_egress_refusals_attributed_total{attributed="yes"} 1`,
		`airlock_calls_total{decision="allow",outcome="executed",tool="terminal"} 1`,
		`airlock_call_duration_seconds_count{tool="terminal"} 1`,
	} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("scrape lacks %s:\n%s", want, grepAirlock(body))
		}
	}

	f, err := os.Open(cfg.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := receipt.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	var denied []*receipt.Receipt
	for _, l := range lines {
		if l.Event == receipt.EventNetworkDenied {
			denied = append(denied, l.Receipt)
		}
	}
	if len(denied) != 1 || denied[0].CallID != c.ID || denied[0].Network == nil ||
		denied[0].Network.Host != "denied.test" || denied[0].Network.Port != 80 || denied[0].Network.Reason != "not_allowlisted" {
		b, _ := json.Marshal(denied)
		t.Fatalf("network_denied events: %s", b)
	}
}

func grepAirlock(b []byte) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "airlock_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
