package helper

import (
	"runtime"
	"testing"
)

// TestSpareProcessor: the helper gets two of the runtime's processors where the host gives
// it one (see SpareProcessor), and keeps more where it has them.
func TestSpareProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct{ had, want int }{{1, 2}, {2, 2}, {3, 3}} {
		runtime.GOMAXPROCS(tc.had)
		SpareProcessor()
		if got := runtime.GOMAXPROCS(0); got != tc.want {
			t.Errorf("GOMAXPROCS %d: SpareProcessor left %d, want %d", tc.had, got, tc.want)
		}
	}
}
