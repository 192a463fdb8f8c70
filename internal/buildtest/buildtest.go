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

	"github.com/airlock-dev/airlock/backend/helper/helpertest"
)

// Main builds ./cmd/airlock and ./cmd/airlock-helper into a temporary directory named after
// prefix, sets *bin to the airlock binary, calls setup with that directory (nil for none: the integration tests point
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
	// airlock-helper beside it, as the README's install puts it: the tests run the helper a
	// user gets (airlock takes it when it is of the same source, backend/helper.Sibling).
	for _, b := range []struct{ out, pkg string }{
		{*bin, "github.com/airlock-dev/airlock/cmd/airlock"},
		{filepath.Join(dir, "airlock-helper"), "github.com/airlock-dev/airlock/cmd/airlock-helper"},
	} {
		build := exec.Command("go", "build", "-o", b.out, b.pkg)
		build.Env = append(os.Environ(), env...)
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", b.pkg, err, out)
			os.Exit(2)
		}
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	// And what a test of the package had helpertest build (the default, dynamically linked
	// build some benchmarks run).
	helpertest.Remove()
	os.Exit(code)
}
