// Package helpertest builds airlock the way a user gets it, for the tests that show the
// resident helper runs from that build. The builds are [buildtest.Program]s: a test package
// that calls DefaultBuild or StaticBuild calls buildtest.Cleanup from its TestMain.
package helpertest

import (
	"debug/elf"
	"os"
	"testing"

	"github.com/airlock-dev/airlock/internal/buildtest"
)

// airlockPkg is what a user builds.
const airlockPkg = "github.com/airlock-dev/airlock/cmd/airlock"

var defaultBuild = buildtest.Program{Pkg: airlockPkg, Prefix: "airlock-default-build-", Env: []string{"CGO_ENABLED=1"}}

// DefaultBuild returns airlock built with `go build ./cmd/airlock` and cgo enabled, as
// `go build` and `go install` do by default on a machine with a C compiler: a dynamically
// linked binary. It is built once per test process. Without a C compiler the build comes
// out static and the test is skipped, since it would show nothing — unless
// AIRLOCK_REQUIRE_CGO=1 (CI) makes that a failure.
func DefaultBuild(t testing.TB) string {
	t.Helper()
	bin := defaultBuild.Path(t)
	if !Dynamic(t, bin) {
		msg := "the default build came out statically linked (no C compiler?): nothing to show"
		if os.Getenv("AIRLOCK_REQUIRE_CGO") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// Dynamic reports whether the ELF file at p asks for a program interpreter.
func Dynamic(t testing.TB, p string) bool {
	t.Helper()
	f, err := elf.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return true
		}
	}
	return false
}

var staticBuild = buildtest.Program{Pkg: airlockPkg, Prefix: "airlock-static-build-", Env: []string{"CGO_ENABLED=0"}}

// StaticBuild returns airlock built with CGO_ENABLED=0, once per test process: the helper a
// backend copies into an image that has no Go and perhaps no C library (a busybox pod). It
// returns the binary AIRLOCK_TEST_HELPER_BINARY names instead, when set (for when the
// working tree does not build).
func StaticBuild(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("AIRLOCK_TEST_HELPER_BINARY"); p != "" {
		return p
	}
	bin := staticBuild.Path(t)
	if Dynamic(t, bin) {
		t.Fatalf("%s is dynamically linked although built with CGO_ENABLED=0", bin)
	}
	return bin
}
