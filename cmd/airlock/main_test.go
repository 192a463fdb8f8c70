package main

import (
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// TestMain lets a test start this test binary as airlock itself: with
// AIRLOCK_TEST_AS_AIRLOCK=1 in its environment the binary runs its command line as main
// would, and no test. `bench --read-batch` starts `airlock call` from its own executable,
// which under `go test` is this binary.
func TestMain(m *testing.M) {
	if os.Getenv("AIRLOCK_TEST_AS_AIRLOCK") == "1" {
		signal.Ignore(syscall.SIGPIPE)
		os.Exit(run(os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}))
	}
	os.Exit(m.Run())
}
