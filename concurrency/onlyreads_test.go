package concurrency

import "testing"

// TestOnlyReadsNeverConflict: the scheduler's shortcut (two scopes that only read are not
// compared) agrees with the rules of conflicts for every pair of a table of scopes.
func TestOnlyReadsNeverConflict(t *testing.T) {
	t.Parallel()
	scopes := []Scope{
		{},
		{Skip: true},
		{Skip: true, Paths: []PathAccess{{Path: "/w", Access: Write}}},
		{NeverParallel: true},
		{Exclusive: true},
		{Paths: []PathAccess{{Path: "/w/a", Access: Read}}},
		{Paths: []PathAccess{{Path: "/w", Access: Read}, {Path: "relative", Access: Read}}},
		{Paths: []PathAccess{{Path: "/w/a"}}}, // zero Access is Write
		{Paths: []PathAccess{{Path: "/w/a", Access: Read}, {Path: "/w/b", Access: Write}}},
		{Paths: []PathAccess{{Path: "/", Access: Write}}},
	}
	for i, a := range scopes {
		for j, b := range scopes {
			if onlyReads(a) && onlyReads(b) && conflicts(cleaned(a), cleaned(b), overlapClean) {
				t.Errorf("scopes %d and %d only read but conflict", i, j)
			}
		}
	}
	for i, want := range []bool{true, true, true, false, false, true, true, false, false, false} {
		if got := onlyReads(scopes[i]); got != want {
			t.Errorf("onlyReads(scope %d) = %v, want %v", i, got, want)
		}
	}
}
