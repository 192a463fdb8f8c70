package helper_test

import (
	"os"
	"testing"

	"github.com/airlock-dev/airlock/internal/buildtest"
)

// TestMain removes the airlock build TestInspectDefaultBuild made (a 50 MB binary a run).
func TestMain(m *testing.M) {
	code := m.Run()
	buildtest.Cleanup()
	os.Exit(code)
}
