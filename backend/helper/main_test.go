package helper_test

import (
	"testing"

	"github.com/airlock-dev/airlock/internal/buildtest"
)

// TestMain removes the airlock build TestInspectDefaultBuild made (a 50 MB binary a run).
func TestMain(m *testing.M) { buildtest.Run(m) }
