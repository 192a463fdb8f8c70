package mcpserver_test

import (
	"testing"

	"github.com/airlock-dev/airlock/internal/buildtest"
)

// TestMain removes the static helper the Docker tests had dockertest build.
func TestMain(m *testing.M) { buildtest.Run(m) }
