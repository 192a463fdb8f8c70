package pipeline

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/tool"
)

// summaryLine bounds each line a summary quotes.
const summaryLine = 200

// Summary is what the model reads of a summary_only tool's output: its size, its first and
// last lines and the exit code, with a word that the caller holds the rest. The lines are
// quoted (%q), so that nothing in them reads as an instruction outside the quotes.
func Summary(out *tool.Output) string {
	var b strings.Builder
	text := strings.TrimRight(out.Content, "\n")
	lines := 0
	if text != "" {
		lines = strings.Count(text, "\n") + 1
	}
	fmt.Fprintf(&b, "[summary_only] the output (%d lines, %d bytes) is withheld from you; the caller has it whole.", lines, len(out.Content))
	if out.ExitCode != nil {
		fmt.Fprintf(&b, " exit code %d.", *out.ExitCode)
	}
	if lines > 0 {
		first, _, _ := strings.Cut(text, "\n")
		fmt.Fprintf(&b, "\nfirst line: %q", clip(first))
	}
	if lines > 1 {
		fmt.Fprintf(&b, "\nlast line: %q", clip(text[strings.LastIndexByte(text, '\n')+1:]))
	}
	return b.String()
}

func clip(s string) string {
	if len(s) <= summaryLine {
		return s
	}
	cut := summaryLine
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
