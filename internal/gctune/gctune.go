// Package gctune sets the Go garbage collector: relaxed for every airlock process's first
// second (StartUp), and steady settings for its long-lived ones, `airlock serve` and the
// resident helper. Both keep a small live heap and allocate a few kilobytes
// for every call, so at the collector's default (a new cycle each time the heap doubles) they
// collect several hundred times a second under load: ~16 % of the server's CPU and ~9 % of a
// helper's in the profile of docs/benchmarks.md ("read_file at volume"). A higher GOGC makes
// the cycles rarer; a soft memory limit keeps the heap, and so the resident set, bounded: as
// the heap nears the limit the collector runs as often as it needs to again.
//
// A GOGC or GOMEMLIMIT in the environment is the operator's choice and is left alone.
package gctune

import (
	"math"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
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
	// Batch is a large batch's (see [ForBatch]).
	Batch = Settings{Percent: 40, Limit: math.MaxInt64}
)

// ForBatch closes the start-up window and sets the collector for a large batch until the
// returned function puts the previous setting back. A batch is decided whole before its
// calls run, so its live heap grows with it (~1 KB a decided call: 10,000 read_file calls
// hold ~16 MiB at the moment the last is decided) and, at the default target, the heap
// grows to twice that before a cycle. A target of 40 % keeps `airlock call` with 10,000
// reads at ~62 MiB resident instead of ~69 (50 % gave 63-64, at the goal's edge), for ~35 %
// more CPU in the batch (docs/benchmarks.md, "One batch's memory"). A GOGC or GOMEMLIMIT in
// the environment is left alone.
func ForBatch() (restore func()) {
	EndStartUp()
	if FromEnvironment() {
		return func() {}
	}
	percent := debug.SetGCPercent(Batch.Percent)
	limit := debug.SetMemoryLimit(Batch.Limit)
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}

// For is the steady setting for the airlock command args once start-up is over: Serve for
// `airlock serve`, which answers calls for hours; nil (the runtime's defaults) for the rest.
func For(args []string) *Settings {
	if len(args) > 0 && args[0] == "serve" {
		return &Serve
	}
	return nil
}

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

// Start-up allocates a few megabytes that stay live (the classifier's rules, the tools'
// schemas, the configuration) and the collector, at its default target, would run several
// times over them before the first call: some 8 % of a cold `airlock exec`'s CPU. For its
// first startWindow a process collects only when its memory nears startHeapLimit: far above
// what a start holds (~10 MiB), and low enough that a batch run in that second (10,000
// reads through `airlock call`) does not grow to it unchecked (it was 256 MiB: the batch's
// resident set was 230 MB, then 120 MB). A command about to run work that is not start-up
// (a large batch) closes the window with [EndStartUp].
const (
	startWindow    = time.Second
	startHeapLimit = 64 << 20
)

// window is the open start-up window, nil once it closed or when none was opened.
var window atomic.Pointer[startWindowState]

type startWindowState struct {
	timer *time.Timer
	end   func() // hands the collector its steady settings, once
}

// StartUp relaxes the collector for the process's first startWindow, then gives it steady,
// or returns it to its settings when steady is nil. A GOGC or GOMEMLIMIT in the environment
// is left alone.
func StartUp(steady *Settings) {
	if FromEnvironment() {
		return
	}
	percent := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(startHeapLimit)
	if steady != nil {
		percent, limit = steady.Percent, steady.Limit
	}
	var once sync.Once
	end := func() {
		once.Do(func() {
			debug.SetMemoryLimit(limit)
			debug.SetGCPercent(percent)
		})
	}
	window.Store(&startWindowState{timer: time.AfterFunc(startWindow, end), end: end})
}

// EndStartUp closes the start-up window now, if it is still open, and gives the collector
// its steady settings. The window is for start-up's few megabytes; work that allocates as it
// goes does not belong in it: `airlock call` with 10,000 reads decided and ran most of them
// inside the window, so its heap grew to the window's 64 MiB whatever the batch held live
// (~16 MiB once results stream), its resident set ~95 MB where the default target gives ~72.
func EndStartUp() {
	if w := window.Swap(nil); w != nil {
		w.timer.Stop()
		w.end()
	}
}
