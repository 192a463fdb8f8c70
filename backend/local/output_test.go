package local_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/backend"
)

// TestOneGiBOfOutput runs a command that prints 1 GiB and checks that it finishes with a
// truncation mark while Airlock allocates a small fraction of that: the cap holds while the
// output streams, not after.
func TestOneGiBOfOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("prints 1 GiB")
	}
	env := newEnv(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := env.Exec(context.Background(), backend.Request{
		Command:        "head -c 1073741824 /dev/zero; echo; echo THE-END",
		MaxOutputBytes: 256 << 10,
	})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || res.StdoutBytes < 1<<30 || !strings.HasSuffix(string(res.Stdout), "THE-END\n") ||
		!strings.Contains(string(res.Stdout), "bytes truncated") {
		t.Fatalf("truncated=%v bytes=%d tail=%q", res.Truncated, res.StdoutBytes, res.Stdout[max(0, len(res.Stdout)-40):])
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("allocated %d MiB while streaming 1 GiB through a 256 KiB cap", grew>>20)
	}
	if len(res.Stdout) > 257<<10 {
		t.Errorf("kept %d bytes", len(res.Stdout))
	}
}
