package backendtest

import (
	"slices"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/backend/procgroup"
)

// BenchAgainstForkExec times run b.N times, each interleaved with the raw alternative
// ([procgroup.TimeForkExec]), and reports both medians and their ratio: whatever else the
// machine does weighs on both alike. Warm the path up before calling it.
func BenchAgainstForkExec(b *testing.B, run func() error) {
	b.Helper()
	ours := make([]time.Duration, 0, b.N)
	raw := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := run(); err != nil {
			b.Fatal(err)
		}
		ours = append(ours, time.Since(start))
		took, err := procgroup.TimeForkExec()
		if err != nil {
			b.Fatal(err)
		}
		raw = append(raw, took)
	}
	b.StopTimer()
	o, r := median(ours), median(raw)
	b.ReportMetric(float64(o.Microseconds()), "exec-p50-µs")
	b.ReportMetric(float64(r.Microseconds()), "raw-p50-µs")
	b.ReportMetric(float64(o)/float64(r), "ratio")
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}
