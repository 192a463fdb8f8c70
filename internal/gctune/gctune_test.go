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

// TestEndStartUp: closing the start-up window early hands the collector its steady settings
// at once, and a second close, or the window's own timer, changes nothing after that.
func TestEndStartUp(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	StartUp(&Settings{Percent: 321, Limit: 123 << 20})
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Fatalf("GC percent %d in the start-up window, want -1 (off)", p)
	}
	EndStartUp()
	if p := debug.SetGCPercent(77); p != 321 {
		t.Errorf("GC percent %d after EndStartUp, want 321", p)
	}
	if l := debug.SetMemoryLimit(-1); l != 123<<20 {
		t.Errorf("memory limit %d after EndStartUp, want %d", l, 123<<20)
	}
	EndStartUp()
	if p := debug.SetGCPercent(-1); p != 77 {
		t.Errorf("GC percent %d after a second EndStartUp, want 77 as set since", p)
	}
}

// TestForBatch: a large batch closes the start-up window (its steady settings are then what
// the batch's end puts back) and collects at Batch's target meanwhile; GOGC in the
// environment is left alone.
func TestForBatch(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	StartUp(&Settings{Percent: 321, Limit: 123 << 20})
	restore := ForBatch()
	if p := debug.SetGCPercent(-1); p != Batch.Percent {
		t.Fatalf("GC percent %d during the batch, want %d", p, Batch.Percent)
	}
	debug.SetGCPercent(Batch.Percent)
	restore()
	if p, l := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1); p != 321 || l != 123<<20 {
		t.Errorf("after the batch: GC percent %d, limit %d; want the steady 321, %d", p, l, 123<<20)
	}
	t.Setenv("GOGC", "75")
	debug.SetGCPercent(75)
	ForBatch()()
	if p := debug.SetGCPercent(-1); p != 75 {
		t.Errorf("GC percent %d with GOGC=75 in the environment, want it left at 75", p)
	}
}
