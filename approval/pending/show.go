package pending

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Everything in a record that came from the agent — its command, paths, URL, diff — is
// shown escaped wherever a person reads it: an escape sequence, a carriage return, a bidi
// override or a byte that is not UTF-8 would otherwise rewrite or hide what the terminal or
// the client shows. A text that needs no escaping is shown as it is; one that does is shown
// Go-quoted, so that "\x1b" written by the agent and a real escape byte never look alike.

// Escape renders s on one line for a person: as it is when every character prints as
// itself (no control, format or bidi character, no space but ' ', valid UTF-8) and it does
// not start with a double quote, else Go-quoted. It quotes as `airlock receipts show` does.
func Escape(s string) string {
	if plain(s) {
		return s
	}
	return strconv.Quote(s)
}

// EscapeText renders a text of many lines (a diff, a script) line by line, each as [Escape]
// renders it: line breaks stay, nothing else passes raw.
func EscapeText(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Escape(l)
	}
	return strings.Join(lines, "\n")
}

// Quote renders s Go-quoted, always: for a fragment shown inside a sentence.
func Quote(s string) string { return strconv.Quote(s) }

func plain(s string) bool {
	if strings.HasPrefix(s, `"`) || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) || unicode.Is(unicode.Cf, r) {
			return false
		}
	}
	return true
}

// Text is the approval as a person reads it, in the client's question or in `airlock
// approvals show`: what the call will do, where, its risk and why, the preview of its effect,
// and what each answer covers. Every value from the agent is escaped.
func (r Record) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Airlock: approve this %s call? (approval %s)\n\n", Escape(r.Tool), r.ID)
	if len(r.Fields) == 0 {
		fmt.Fprintf(&b, "%s\n", field("call", r.Summary))
	}
	for _, f := range r.Fields {
		fmt.Fprintf(&b, "%s\n", field(f.Name, f.Value))
	}
	if r.Workdir != "" {
		fmt.Fprintf(&b, "%s\n", field("runs in", r.Workdir))
	}
	fmt.Fprintf(&b, "%s\n%s\n", field("backend", r.Backend), field("risk", r.Risk))
	for _, reason := range r.Reasons {
		fmt.Fprintf(&b, "%s\n", field("reason", reason))
	}
	if r.Preview != "" {
		fmt.Fprintf(&b, "\n%s\n", EscapeText(strings.TrimSuffix(r.Preview, "\n")))
	}
	fmt.Fprintf(&b, "\napprove once: runs this call only\n")
	fmt.Fprintf(&b, "approve for the session: runs this call and, for the rest of the session without asking, %s\n", Escape(r.covers()))
	fmt.Fprintf(&b, "expires: %s; or answer from a terminal: airlock approvals approve|deny %s\n", r.ExpiresAt.Format(time.RFC3339), r.ID)
	return b.String()
}

// covers says what an answer for the session covers.
func (r Record) covers() string {
	if r.SessionCovers != "" {
		return r.SessionCovers
	}
	return "this exact call again"
}

// field renders one labelled value; each further line of a value is indented under it, so
// that no value can pass for a label of its own.
func field(name, value string) string {
	label := Escape(name) + ":"
	lines := strings.Split(value, "\n")
	for i, l := range lines {
		lines[i] = Escape(l)
	}
	return fmt.Sprintf("%-9s %s", label, strings.Join(lines, "\n          | "))
}
