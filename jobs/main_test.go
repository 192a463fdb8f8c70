package jobs_test

import (
	"testing"

	"github.com/airlock-dev/airlock/internal/buildtest"
)

// TestMain removes the helpers the Docker and SSH tests had dockertest and sshtest build.
func TestMain(m *testing.M) { buildtest.Run(m) }
