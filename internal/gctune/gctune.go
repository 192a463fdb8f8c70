// Package gctune sets the Go garbage collector of Airlock's long-lived processes: `airlock
// serve` and the resident helper. Both keep a small live heap and allocate a few kilobytes
// for every call, so at the collector's default (a new cycle each time the heap doubles) they
// collect several hundred times a second under load: ~16 % of the server's CPU and ~9 % of a
// helper's in the profile of docs/benchmarks.md ("read_file at volume"). A higher GOGC makes
// the cycles rarer; a soft memory limit keeps the heap, and so the resident set, bounded: as
// the heap nears the limit the collector runs as often as it needs to again.
//
// A GOGC or GOMEMLIMIT in the environment is the operator's choice and is left alone.
package gctune

import (
	"os"
	"runtime/debug"
)

// Settings are a collector target and a soft memory limit.
type Settings struct {
	Percent int   // as GOGC
	Limit   int64 // as GOMEMLIMIT, in bytes
}

var (
	// Serve is `airlock serve`'s: its live heap is some tens of MiB (configuration, the
	// classifier's rules, the sessions), so a fivefold target stays under the limit until
	// the heap grows well past what a server of a few sessions holds.
	Serve = Settings{Percent: 400, Limit: 256 << 20}
	// Helper is the resident helper's: its live heap is a few MiB.
	Helper = Settings{Percent: 400, Limit: 64 << 20}
)

// FromEnvironment reports whether GOGC or GOMEMLIMIT is set in the environment.
func FromEnvironment() bool {
	return os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != ""
}

// Apply sets s unless the environment sets the collector; it reports whether it did.
func Apply(s Settings) bool {
	if FromEnvironment() {
		return false
	}
	debug.SetGCPercent(s.Percent)
	debug.SetMemoryLimit(s.Limit)
	return true
}
