package backend

import (
	"strings"
	"testing"
)

func TestTakeOldKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, old, cur       string
		wantCur, note, error string
	}{
		{name: "neither"},
		{name: "new name", cur: "off", wantCur: "off"},
		{name: "old name", old: "off", wantCur: "off", note: "environment.docker.agent is deprecated: call it helper"},
		{name: "both", old: "off", cur: "auto", wantCur: "auto", error: "environment.docker.helper and environment.docker.agent are the same setting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			old, cur := tc.old, tc.cur
			note, err := TakeOldKey("environment.docker", "agent", &old, "helper", &cur)
			switch {
			case tc.error != "" && (err == nil || !strings.Contains(err.Error(), tc.error)):
				t.Errorf("error %v, want %q", err, tc.error)
			case tc.error == "" && err != nil:
				t.Errorf("error %v", err)
			case cur != tc.wantCur:
				t.Errorf("value %q, want %q", cur, tc.wantCur)
			case tc.error == "" && old != "":
				t.Errorf("old value %q left behind", old)
			case !strings.HasPrefix(note, tc.note) || (tc.note == "") != (note == ""):
				t.Errorf("note %q, want %q", note, tc.note)
			}
		})
	}
}

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
