// Package startup relaxes the collector for the airlock command from package
// initialisation on ([gctune.StartUp]). cmd/airlock imports it for this side effect alone.
//
// Why an init, not a call in main: the airlock binary's packages allocate ~4 MB while they
// initialise (jsonschema's meta-schemas, the Docker and Kubernetes clients' tables,
// Prometheus's registry), so the collector, at its default target of a 4 MB heap, ran once
// before main could relax it — a mark of ~1.4 ms beside the initialisation on a 2-core
// machine. Go initialises packages in the order of their import paths as their dependencies
// allow; this one needs only the runtime, os and time, so it runs before ~85 % of the
// initialisation time (GODEBUG=inittrace=1 lists the order).
package startup

import (
	"os"

	"github.com/airlock-dev/airlock/internal/gctune"
)

func init() {
	gctune.StartUp(gctune.For(os.Args[1:]))
}
