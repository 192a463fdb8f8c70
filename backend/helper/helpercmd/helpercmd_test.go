package helpercmd

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// threadCount is the number of threads of this process.
func threadCount(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(rest))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

// The threads made up front exist, and stay, once prewarmThreads returns: the helper needs
// no new thread later, when a fork bomb may have taken every PID.
func TestPrewarmThreads(t *testing.T) {
	before := threadCount(t)
	prewarmThreads(threads)
	after := threadCount(t)
	if after < threads {
		t.Fatalf("%d threads after prewarming %d (before: %d)", after, threads, before)
	}
	prewarmThreads(threads)
	// The goroutine that waits for them may need one more thread of its own.
	if again := threadCount(t); again > after+1 {
		t.Errorf("a second prewarm made %d more threads: the first ones were not kept", again-after)
	}
}
