package differential

import (
	"os"
	"testing"

	"github.com/airlock-dev/airlock/internal/buildtest"
)

// TestMain removes the probe the image tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	buildtest.Cleanup()
	os.Exit(code)
}
