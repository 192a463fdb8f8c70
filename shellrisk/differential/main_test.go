package differential

import (
	"testing"

	"github.com/airlock-dev/airlock/internal/buildtest"
)

// TestMain removes the probe the image tests built.
func TestMain(m *testing.M) { buildtest.Run(m) }
