package buildtest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Main builds ./cmd/airlock and ./cmd/airlock-helper into a temporary directory named after
// prefix, sets *bin to the airlock binary, calls setup with that directory (nil for none:
// the integration tests point XDG_STATE_HOME there), runs the tests and calls [Cleanup],
// which removes the directory and whatever else the tests built. env is added to the
// build's environment (CGO_ENABLED=0 for a static binary). It does not return.
func Main(m *testing.M, prefix string, bin *string, setup func(dir string) error, env ...string) {
	if err := prepare(prefix, bin, setup, env); err != nil {
		Cleanup()
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// prepare makes Main's directory, sets *bin, calls setup and builds the two binaries.
func prepare(prefix string, bin *string, setup func(dir string) error, env []string) error {
	dir, err := MkdirTemp("airlock-" + prefix + "-")
	if err != nil {
		return err
	}
	*bin = filepath.Join(dir, "airlock")
	if setup != nil {
		if err := setup(dir); err != nil {
			return fmt.Errorf("test setup: %w", err)
		}
	}
	// airlock-helper beside it, as the README's install puts it: the tests run the helper a
	// user gets (airlock takes it when it is of the same source, backend/helper.Sibling).
	for _, b := range []struct{ out, pkg string }{
		{*bin, "github.com/airlock-dev/airlock/cmd/airlock"},
		{filepath.Join(dir, "airlock-helper"), "github.com/airlock-dev/airlock/cmd/airlock-helper"},
	} {
		if err := goBuild(b.out, b.pkg, env, nil, 0); err != nil {
			return err
		}
	}
	return nil
}
