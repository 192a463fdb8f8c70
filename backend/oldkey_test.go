package backend

import (
	"strings"
	"testing"
)

func TestCanonicalMode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"agent": "helper", "helper": "helper", "exec": "exec", "": ""} {
		if got := CanonicalMode(in); got != want {
			t.Errorf("CanonicalMode(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOldKeysCopies: a section is copied by value (the runtime's per-environment copy, New's
// withDefaults); a note given to one copy must not appear in another that shares its notes'
// backing array, and two callers appending to what OldKeyNotes returns must not meet.
func TestOldKeysCopies(t *testing.T) {
	t.Parallel()
	var a OldKeys
	for _, n := range []string{"one", "two", "three"} { // leaves room in the backing array
		a.NoteOldKey(n)
	}
	b := a
	a.NoteOldKey("a's")
	b.NoteOldKey("b's")
	if got := strings.Join(a.OldKeyNotes(), ","); got != "one,two,three,a's" {
		t.Errorf("a's notes %q, want one,two,three,a's", got)
	}
	if got := strings.Join(b.OldKeyNotes(), ","); got != "one,two,three,b's" {
		t.Errorf("b's notes %q, want one,two,three,b's", got)
	}
	x, y := append(a.OldKeyNotes(), "x"), append(a.OldKeyNotes(), "y")
	if x[len(x)-1] != "x" || y[len(y)-1] != "y" {
		t.Errorf("two callers' appends to the notes: %q and %q, want each its own last note", x, y)
	}
}
