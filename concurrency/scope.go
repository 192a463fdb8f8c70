package concurrency

import (
	"path"
	"strings"
)

// Access says whether a call reads or writes a path.
//
// The zero value is neither and is treated as [Write], so that a scope built without setting
// Access is ordered rather than raced.
type Access int

const (
	// Read leaves the path unchanged; reads of the same path may run together.
	Read Access = iota + 1
	// Write may change the path or anything below it.
	Write
)

// String returns "read", "write" or "unknown".
func (a Access) String() string {
	switch a {
	case Read:
		return "read"
	case Write:
		return "write"
	default:
		return "unknown"
	}
}

// PathAccess is one path a call touches and how.
type PathAccess struct {
	// Path is absolute and slash-separated, already resolved by policy. It need not exist yet.
	Path   string
	Access Access
}

// Scope is what a call declares it touches; the scheduler orders calls by it and by nothing
// else.
type Scope struct {
	// Paths lists the paths the call reads or writes.
	Paths []PathAccess
	// NeverParallel makes the call a barrier: everything before it finishes first, and nothing
	// after it starts until it has finished.
	NeverParallel bool
	// Exclusive marks a tool that is not parallel-safe but declares no paths. It is treated as a
	// write on "/": it conflicts with every call that declares a path and with every other
	// Exclusive call, but it is not a barrier, so calls that touch no path still run beside it.
	Exclusive bool
	// Skip marks a denied or invalid call: it is not run and never delays another call.
	Skip bool
}

// Conflicts reports whether a and b must not run at the same time; the scheduler then runs them
// in input order. It is symmetric and pure.
func Conflicts(a, b Scope) bool {
	return conflicts(a, b, Overlap)
}

// conflicts holds the rules; overlap lets the scheduler pass a comparison of paths it has
// already cleaned, so a batch cleans each path once instead of once per pair.
func conflicts(a, b Scope, overlap func(p, q string) bool) bool {
	switch {
	case a.Skip || b.Skip:
		return false
	case a.NeverParallel || b.NeverParallel:
		return true
	case a.Exclusive && (b.Exclusive || len(b.Paths) > 0), b.Exclusive && len(a.Paths) > 0:
		return true
	}
	for _, pa := range a.Paths {
		for _, pb := range b.Paths {
			if pa.Access == Read && pb.Access == Read {
				continue
			}
			if overlap(pa.Path, pb.Path) {
				return true
			}
		}
	}
	return false
}

// Overlap reports whether p and q name the same file or one lies under the other, comparing
// whole path components after [path.Clean]: "/a" overlaps "/a/b" but not "/ab". A path that is
// not absolute overlaps everything, because what it names depends on a directory the scheduler
// does not know.
func Overlap(p, q string) bool {
	return overlapClean(path.Clean(p), path.Clean(q))
}

// overlapClean is [Overlap] for paths already passed through [path.Clean].
func overlapClean(p, q string) bool {
	if !path.IsAbs(p) || !path.IsAbs(q) {
		return true
	}
	if len(p) > len(q) {
		p, q = q, p
	}
	switch {
	case p == q, p == "/":
		return true
	default:
		return strings.HasPrefix(q, p) && q[len(p)] == '/'
	}
}
