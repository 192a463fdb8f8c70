//go:build linux && cgo

package helper

import "testing"

// TestEarlyArg0: the C constructor acts on the helper's argv[0], not on some other name.
func TestEarlyArg0(t *testing.T) {
	if got := earlyArg0(); got != arg0Setup {
		t.Fatalf("constructor's argv[0] %q, helper's %q", got, arg0Setup)
	}
}
