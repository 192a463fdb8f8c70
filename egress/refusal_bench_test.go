package egress_test

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"testing"

	"github.com/airlock-dev/airlock/backend/sockowner"
	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/urlguard"
)

// BenchmarkRefusal sets the cost of naming the call behind a refused request (the
// sockowner lookup: one sock_diag query, then the running commands' process trees — here
// one command) beside the same refusal with no attribution, in the same run. The refused
// name is judged by the allowlist alone: nothing is resolved or dialled.
func BenchmarkRefusal(b *testing.B) {
	for _, owned := range []bool{false, true} {
		name := "plain"
		if owned {
			name = "owner_lookup"
		}
		b.Run(name, func(b *testing.B) {
			g, err := urlguard.New(urlguard.Config{Mode: urlguard.ModeAllowlist, AllowDomains: []string{"allowed.test"}})
			if err != nil {
				b.Fatal(err)
			}
			var unattributed int
			p, err := egress.New(g, egress.WithOnDenied(func(d egress.Denial) {
				if d.Unattributed != "" {
					unattributed++
				}
			}))
			if err != nil {
				b.Fatal(err)
			}
			if owned {
				// A running command for the lookup to look through; the connections are
				// this process's own, so the answer is "unattributed" after the full walk.
				cmd := exec.Command("sleep", "600")
				if err := cmd.Start(); err != nil {
					b.Skip(err)
				}
				b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
				tab := sockowner.New()
				defer tab.Add(cmd.Process.Pid, "call-bench")()
				p.SetOwner(tab.Owner)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			go p.Serve(ln)
			b.Cleanup(func() { p.Close() })
			proxyURL, _ := url.Parse("http://" + ln.Addr().String())
			c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				resp, err := c.Get("http://denied.test/")
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusForbidden {
					b.Fatal(resp.Status)
				}
			}
		})
	}
}
