package main

import (
	"runtime/debug"
	"strings"
)

// version may be set at build time with -ldflags "-X main.version=…"; otherwise the module's
// build info says it: the module version for `go install …@vX`, or "(devel)" for a build
// from a checkout, with the commit and whether the tree had changes.
var version = ""

// buildInfo is what versionLine prints.
type buildInfo struct {
	Version   string
	Revision  string
	Time      string
	Modified  bool
	GoVersion string
	CGO       string // CGO_ENABLED at build: "0" means a static binary the helpers can run anywhere
}

func readBuildInfo() buildInfo {
	var b buildInfo
	bi, ok := debug.ReadBuildInfo()
	if ok {
		b.Version = bi.Main.Version
		b.GoVersion = bi.GoVersion
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "CGO_ENABLED":
				b.CGO = kv.Value
			case "vcs.revision":
				b.Revision = kv.Value
			case "vcs.time":
				b.Time = kv.Value
			case "vcs.modified":
				b.Modified = kv.Value == "true"
			}
		}
	}
	if version != "" {
		b.Version = version
	}
	if b.Version == "" {
		b.Version = "(unknown)"
	}
	return b
}

// versionLine is `airlock VERSION (commit REV[ with uncommitted changes], TIME, goX, CGO_ENABLED=N)`.
func versionLine(b buildInfo) string {
	var parts []string
	if b.Revision != "" {
		rev := "commit " + b.Revision[:min(len(b.Revision), 12)]
		if b.Modified {
			rev += " with uncommitted changes"
		}
		parts = append(parts, rev)
	}
	if b.Time != "" {
		parts = append(parts, b.Time)
	}
	if b.GoVersion != "" {
		parts = append(parts, b.GoVersion)
	}
	if b.CGO != "" {
		parts = append(parts, "CGO_ENABLED="+b.CGO)
	}
	line := "airlock " + b.Version
	if len(parts) > 0 {
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	return line
}
