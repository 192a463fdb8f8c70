// Package helpertest builds airlock the way a user gets it, for the tests that show the
// resident helper runs from that build.
package helpertest

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// binary is airlock built once per test process in one way.
type binary struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// make builds ./cmd/airlock once into a temporary directory named after prefix, with env
// added to the build's environment.
func (b *binary) make(prefix, env string) {
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", prefix)
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "airlock")
		cmd := exec.Command("go", "build", "-o", b.path, "github.com/airlock-dev/airlock/cmd/airlock")
		cmd.Env = append(os.Environ(), env)
		b.out, b.err = cmd.CombinedOutput()
	})
}

var build binary

// DefaultBuild returns airlock built with `go build ./cmd/airlock` and cgo enabled, as
// `go build` and `go install` do by default on a machine with a C compiler: a dynamically
// linked binary. It is built once per test process. Without a C compiler the build comes
// out static and the test is skipped, since it would show nothing — unless
// AIRLOCK_REQUIRE_CGO=1 (CI) makes that a failure.
func DefaultBuild(t testing.TB) string {
	t.Helper()
	build.make("airlock-default-build-", "CGO_ENABLED=1")
	if build.err != nil {
		t.Fatalf("go build ./cmd/airlock (CGO_ENABLED=1): %v\n%s", build.err, build.out)
	}
	if !Dynamic(t, build.path) {
		msg := "the default build came out statically linked (no C compiler?): nothing to show"
		if os.Getenv("AIRLOCK_REQUIRE_CGO") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return build.path
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

var static binary

// StaticBuild returns airlock built with CGO_ENABLED=0, once per test process: the helper a
// backend copies into an image that has no Go and perhaps no C library (a busybox pod). It
// returns the binary AIRLOCK_TEST_HELPER_BINARY names instead, when set (for when the
// working tree does not build).
func StaticBuild(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("AIRLOCK_TEST_HELPER_BINARY"); p != "" {
		return p
	}
	static.make("airlock-static-build-", "CGO_ENABLED=0")
	if static.err != nil {
		t.Fatalf("go build ./cmd/airlock (CGO_ENABLED=0): %v\n%s", static.err, static.out)
	}
	if Dynamic(t, static.path) {
		t.Fatalf("%s is dynamically linked although built with CGO_ENABLED=0", static.path)
	}
	return static.path
}

// Remove deletes the binaries DefaultBuild and StaticBuild made; call it from TestMain after
// the tests.
func Remove() {
	for _, p := range []string{build.path, static.path} {
		if p != "" {
			_ = os.RemoveAll(filepath.Dir(p))
		}
	}
}
