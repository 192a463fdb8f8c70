package backend

import "slices"

// ModeHelper is the [Description.Mode] of an environment whose commands go to its resident
// helper, and the name bench --mode takes for it.
const ModeHelper = "helper"

// OldModeHelper is ModeHelper's former name, "agent": that word means the AI agent that
// proposes calls, and the helper is not it. It is still accepted where a user types a mode
// ([CanonicalMode]); nothing reports it.
const OldModeHelper = "agent"

// CanonicalMode is mode with a former name replaced by the current one.
func CanonicalMode(mode string) string {
	if mode == OldModeHelper {
		return ModeHelper
	}
	return mode
}

// OldKeys is embedded in the section of a backend whose [Record.Renamed] names former keys:
// configs gives it a note for each key the file named by its former name, and the backend's
// Describe shows [OldKeys.OldKeyNotes]. Its field is unexported so that no TOML fills it, and
// it is held by value so that the copies a backend makes of its section carry the notes.
type OldKeys struct{ notes []string }

// OldKeyNoter is what configs needs of a section to give it those notes: a pointer to a
// section that embeds [OldKeys].
type OldKeyNoter interface{ NoteOldKey(note string) }

// NoteOldKey adds a note for [Description.Notes].
func (o *OldKeys) NoteOldKey(note string) {
	// Appended to a full slice, so that a copy of the section made earlier, which shares the
	// backing array, never sees notes given after it was made.
	o.notes = append(o.notes[:len(o.notes):len(o.notes)], note)
}

// OldKeyNotes returns the notes in the order they were given; an append to the result gets
// an array of its own.
func (o OldKeys) OldKeyNotes() []string { return slices.Clip(o.notes) }
