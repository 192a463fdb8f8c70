// Package buildtest builds the airlock binary once for a test package whose tests run it as
// a user would (the integration tests, the MCP clients', airlock serve's): one TestMain
// shape instead of a copy per package.
package buildtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Main builds ./cmd/airlock into a temporary directory named after prefix, sets *bin to
// the binary, calls setup with that directory (nil for none: the integration tests point
// XDG_STATE_HOME there), runs the tests and removes the directory. env is added to the
// build's environment (CGO_ENABLED=0 for a static binary). It does not return.
func Main(m *testing.M, prefix string, bin *string, setup func(dir string) error, env ...string) {
	dir, err := os.MkdirTemp("", "airlock-"+prefix+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	*bin = filepath.Join(dir, "airlock")
	if setup != nil {
		if err := setup(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	build := exec.Command("go", "build", "-o", *bin, "github.com/airlock-dev/airlock/cmd/airlock")
	build.Env = append(os.Environ(), env...)
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build airlock: %v\n%s", err, out)
		os.Exit(2)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
