package buildtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Program is a Go program built at most once per test process, on first use, into a
// directory of its own that [Cleanup] removes. Declare it as a package-level variable; it
// must not be copied after first use.
type Program struct {
	// Pkg is what `go build` builds: an import path, or a path relative to the test's
	// package directory ("./testdata/NAME").
	Pkg string
	// Name is the binary's file name; empty means the last element of Pkg.
	Name string
	// Prefix names the temporary directory (os.MkdirTemp's pattern); empty means
	// "airlock-NAME-".
	Prefix string
	// Env is added to the build's environment ("CGO_ENABLED=0" for a static binary).
	Env []string
	// Flags go to `go build` before -o ("-trimpath").
	Flags []string
	// Timeout bounds the build; zero means no bound but the test binary's own.
	Timeout time.Duration

	once sync.Once
	path string
	err  error
}

// Build builds the program on the first call and returns its path, or why it could not be
// built (with the build's output), on this and every later call.
func (p *Program) Build() (string, error) {
	p.once.Do(func() {
		name := p.Name
		if name == "" {
			name = path.Base(p.Pkg)
		}
		prefix := p.Prefix
		if prefix == "" {
			prefix = "airlock-" + name + "-"
		}
		dir, err := MkdirTemp(prefix)
		if err != nil {
			p.err = err
			return
		}
		out := filepath.Join(dir, name)
		if p.err = goBuild(out, p.Pkg, p.Env, p.Flags, p.Timeout); p.err == nil {
			p.path = out
		}
	})
	return p.path, p.err
}

// Path returns the program's path, building it on first use; a failed build fails the test.
func (p *Program) Path(t testing.TB) string {
	t.Helper()
	bin, err := p.Build()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// goBuild runs `go build -o out pkg` with env added to the environment.
func goBuild(out, pkg string, env, flags []string, timeout time.Duration) error {
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	args := append(append([]string{"build"}, flags...), "-o", out, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		line := append(append(slices.Clone(env), "go"), args...)
		return fmt.Errorf("%s: %w\n%s", strings.Join(line, " "), err, b)
	}
	return nil
}

// made lists the directories [MkdirTemp] made in this process, for [Cleanup].
var made struct {
	sync.Mutex
	dirs []string
}

// MkdirTemp makes a directory in the system's temporary directory, as os.MkdirTemp("",
// prefix) does, that lasts until [Cleanup]: for what outlives one test, such as a workspace
// the tests of a package share.
func MkdirTemp(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", fmt.Errorf("test temp dir: %w", err)
	}
	made.Lock()
	made.dirs = append(made.dirs, dir)
	made.Unlock()
	return dir, nil
}

// Cleanup removes every directory [MkdirTemp] made and every [Program] built in this
// process. Call it from TestMain after m.Run, in every test package that reaches one.
func Cleanup() {
	made.Lock()
	defer made.Unlock()
	for _, dir := range made.dirs {
		_ = os.RemoveAll(dir)
	}
	made.dirs = nil
}

// Run runs a test package's tests, calls [Cleanup] and exits with the tests' code: the whole
// TestMain of a package that needs nothing else, `func TestMain(m *testing.M) { buildtest.Run(m) }`.
func Run(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// CopyFile copies the file src to dst, which must not exist yet, with mode perm (a built
// program put where a test needs it: beside another, or where another user can run it).
func CopyFile(t testing.TB, src, dst string, perm os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
