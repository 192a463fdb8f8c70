package concurrency

import "testing"

func TestOverlap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p, q string
		want bool
	}{
		{"equal", "/w/a", "/w/a", true},
		{"ancestor", "/w", "/w/a/x", true},
		{"descendant", "/w/a/x", "/w", true},
		{"sibling", "/w/a", "/w/b", false},
		{"similar prefix", "/a/b", "/a/bc", false},
		{"similar prefix reversed", "/a/bc", "/a/b", false},
		{"trailing slash", "/w/a/", "/w/a", true},
		{"trailing slash on ancestor", "/w/", "/w/a", true},
		{"trailing slash on sibling", "/w/a/", "/w/ab", false},
		{"dot dot into sibling", "/w/a/../b", "/w/b/x", true},
		{"dot dot away", "/w/a/../b", "/w/a", false},
		{"dot dot above root", "/../w", "/w", true},
		{"double slash", "/w//a", "/w/a", true},
		{"dot component", "/w/./a", "/w/a/x", true},
		{"root and path", "/", "/w/a", true},
		{"root and root", "/", "/", true},
		{"relative overlaps all", "a", "/w/b", true},
		{"empty overlaps all", "", "/w", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Overlap(tc.p, tc.q); got != tc.want {
				t.Errorf("Overlap(%q, %q) = %v, want %v", tc.p, tc.q, got, tc.want)
			}
			if got := Overlap(tc.q, tc.p); got != tc.want {
				t.Errorf("Overlap(%q, %q) = %v, want %v (not symmetric)", tc.q, tc.p, got, tc.want)
			}
		})
	}
}

func TestConflicts(t *testing.T) {
	t.Parallel()
	read := func(p string) Scope { return Scope{Paths: []PathAccess{{Path: p, Access: Read}}} }
	write := func(p string) Scope { return Scope{Paths: []PathAccess{{Path: p, Access: Write}}} }
	tests := []struct {
		name string
		a, b Scope
		want bool
	}{
		{"read read same path", read("/w/a"), read("/w/a"), false},
		{"read read ancestor", read("/w"), read("/w/a"), false},
		{"read write same path", read("/w/a"), write("/w/a"), true},
		{"write write same path", write("/w/a"), write("/w/a"), true},
		{"write ancestor of read", write("/w"), read("/w/a/x"), true},
		{"write sibling", write("/w/a"), write("/w/b"), false},
		{"write similar prefix", write("/a/b"), write("/a/bc"), false},
		{"write trailing slash", write("/w/a/"), read("/w/a"), true},
		{"write dot dot", write("/w/a/../b"), read("/w/b"), true},
		{"write root", write("/"), read("/w/a"), true},
		{"zero access counts as write", Scope{Paths: []PathAccess{{Path: "/w/a"}}}, read("/w/a"), true},
		{"one of several paths overlaps", Scope{Paths: []PathAccess{
			{Path: "/w/a", Access: Read}, {Path: "/w/b", Access: Write},
		}}, read("/w/b/x"), true},
		{"no paths", Scope{}, Scope{}, false},
		{"no paths and write", Scope{}, write("/w"), false},
		{"never parallel and no paths", Scope{NeverParallel: true}, Scope{}, true},
		{"never parallel and read", Scope{NeverParallel: true}, read("/w"), true},
		{"exclusive and path", Scope{Exclusive: true}, read("/w/a"), true},
		{"exclusive and exclusive", Scope{Exclusive: true}, Scope{Exclusive: true}, true},
		{"exclusive and no paths", Scope{Exclusive: true}, Scope{}, false},
		{"skip beats write", Scope{Skip: true, Paths: write("/w").Paths}, write("/w"), false},
		{"skip beats never parallel", Scope{Skip: true}, Scope{NeverParallel: true}, false},
		{"skip beats exclusive", Scope{Skip: true, Exclusive: true}, write("/w"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Conflicts(tc.a, tc.b); got != tc.want {
				t.Errorf("Conflicts(a, b) = %v, want %v", got, tc.want)
			}
			if got := Conflicts(tc.b, tc.a); got != tc.want {
				t.Errorf("Conflicts(b, a) = %v, want %v (not symmetric)", got, tc.want)
			}
		})
	}
}

func TestAccessString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a    Access
		want string
	}{
		{Read, "read"},
		{Write, "write"},
		{0, "unknown"},
	}
	for _, tc := range tests {
		if got := tc.a.String(); got != tc.want {
			t.Errorf("Access(%d).String() = %q, want %q", int(tc.a), got, tc.want)
		}
	}
}
