package gctune

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestApplySetsTheCollector(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	if !Apply(Settings{Percent: 321, Limit: 123 << 20}) {
		t.Fatal("Apply with no GOGC or GOMEMLIMIT set did nothing")
	}
	if p := debug.SetGCPercent(100); p != 321 {
		t.Errorf("GC percent %d, want 321", p)
	}
	if l := debug.SetMemoryLimit(-1); l != 123<<20 {
		t.Errorf("memory limit %d, want %d", l, 123<<20)
	}
}

func TestApplyLeavesTheEnvironmentsSettings(t *testing.T) {
	for _, v := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(v, func(t *testing.T) {
			t.Setenv("GOGC", "")
			t.Setenv("GOMEMLIMIT", "")
			t.Setenv(v, "200")
			before := debug.SetGCPercent(-1)
			debug.SetGCPercent(before)
			if Apply(Settings{Percent: 321, Limit: 123 << 20}) {
				t.Fatalf("Apply with %s set changed the collector", v)
			}
			if p := debug.SetGCPercent(before); p != before {
				t.Errorf("GC percent %d, want %d as it was", p, before)
			}
		})
	}
}
