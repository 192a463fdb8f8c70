package buildtest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/buildtest"
)

func TestMain(m *testing.M) { buildtest.Run(m) }

var hello = buildtest.Program{Pkg: "./testdata/hello", Prefix: "airlock-buildtest-hello-", Env: []string{"CGO_ENABLED=0"}}

// A program is built once, runs, and is gone after Cleanup with every directory MkdirTemp
// made; a failed build says why on every call.
func TestProgram(t *testing.T) {
	p := hello.Path(t)
	if again := hello.Path(t); again != p {
		t.Fatalf("built twice: %s, then %s", p, again)
	}
	if filepath.Base(p) != "hello" || !strings.HasPrefix(filepath.Base(filepath.Dir(p)), "airlock-buildtest-hello-") {
		t.Errorf("path %s", p)
	}
	if out, err := exec.Command(p).CombinedOutput(); err != nil || string(out) != "hello\n" {
		t.Fatalf("run %s: %v: %q", p, err, out)
	}

	broken := buildtest.Program{Pkg: "./testdata/missing"}
	_, err := broken.Build()
	if err == nil || !strings.Contains(err.Error(), "go build -o") || !strings.Contains(err.Error(), "testdata/missing") {
		t.Fatalf("a missing package built: %v", err)
	}
	if _, again := broken.Build(); again != err {
		t.Errorf("the second call said %v, not %v", again, err)
	}

	dir, err := buildtest.MkdirTemp("airlock-buildtest-dir-")
	if err != nil {
		t.Fatal(err)
	}
	buildtest.Cleanup()
	for _, gone := range []string{filepath.Dir(p), dir} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s left after Cleanup: %v", gone, err)
		}
	}
}
