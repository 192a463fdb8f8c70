package metrics

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestServeAndScrape(t *testing.T) {
	m := New()
	srv, err := m.Serve(Config{Listen: "127.0.0.1:0", Path: "/m"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	m.Request(false, "metadata_address")
	m.Request(false, "metadata_address")
	m.Request(true, "")
	m.Bytes(10, 20)
	m.Refusal(false)
	m.Call("terminal", "deny", "not_executed", 2*time.Millisecond)
	resp, err := http.Get("http://" + srv.Addr().String() + "/m")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`airlock_egress_requests_total{decision="refused",reason="metadata_address"} 2`,
		`airlock_egress_requests_total{decision="allowed",reason=""} 1`,
		`airlock_egress_bytes_total{direction="up"} 10`,
		`airlock_egress_bytes_total{direction="down"} 20`,
		`airlock_egress_refusals_attributed_total{attributed="no"} 1`,
		`airlock_calls_total{decision="deny",outcome="not_executed",tool="terminal"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
	if resp, err := http.Get("http://" + srv.Addr().String() + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("unconfigured path answered %d", resp.StatusCode)
		}
	}
}

func TestNilCountsNothing(t *testing.T) {
	var m *Metrics
	m.Request(false, "x")
	m.Bytes(1, 1)
	m.Refusal(true)
	m.Call("t", "d", "o", 0)
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		c     Config
		field string // "" when valid
	}{
		{Config{}, ""},
		{Config{Listen: "127.0.0.1:9464"}, ""},
		{Config{Listen: "127.8.9.10:9464"}, ""},
		{Config{Listen: "[::1]:9464"}, ""},
		{Config{Listen: "localhost:9464"}, ""},
		{Config{Listen: "[::ffff:127.0.0.1]:9464"}, ""},
		{Config{Listen: "0.0.0.0:9464"}, "listen"},
		{Config{Listen: "[::]:9464"}, "listen"},
		{Config{Listen: ":9464"}, "listen"},
		{Config{Listen: "10.0.0.1:9464"}, "listen"},
		{Config{Listen: "10.0.0.1:9464", AllowNonLoopback: true}, ""},
		{Config{Listen: "127.0.0.1"}, "listen"},
		{Config{Listen: "127.0.0.1:99999"}, "listen"},
		{Config{Listen: "metrics.example:9464"}, "listen"},
		{Config{Path: "metrics"}, "path"},
	} {
		err := tc.c.Validate()
		var fe *FieldError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%+v: %v", tc.c, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
			t.Errorf("%+v: error %v, want one naming metrics.%s", tc.c, err, tc.field)
		}
	}
}
