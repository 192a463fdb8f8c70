package kubernetes_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/backendtest"
	"github.com/airlock-dev/airlock/fileops/fileopstest"
)

// The suites run with one named session per suite, as the processes of one session would:
// every case opens an environment of its own (its own helper on its own exec stream), and
// all of them find the session's one pod by its fingerprint.

func TestConformance(t *testing.T) {
	cfg := testConfig(t)
	cfg.Session = fmt.Sprintf("conformance-%d", os.Getpid())
	backendtest.Run(t, func(t *testing.T) backend.Environment { return newEnv(t, cfg) })
}

func TestFileTools(t *testing.T) {
	cfg := testConfig(t)
	cfg.Session = fmt.Sprintf("filetools-%d", os.Getpid())
	fileopstest.Run(t, func(t *testing.T) backend.Environment { return newEnv(t, cfg) })
}
