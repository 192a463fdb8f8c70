package mcpserver

import (
	"fmt"
	"strings"
)

// maxDiffLines bounds what a person is shown of a change; the rest is counted.
const maxDiffLines = 200

// unifiedDiff renders old → new as one unified hunk: the lines both share at the start and
// the end are left out (three kept as context), the rest shown as removed and added. It is
// for a person's eye, not for patch(1): the smallest diff is not needed to see a change.
func unifiedDiff(name, old, new string) string {
	if old == new {
		return ""
	}
	a, b := lines(old), lines(new)
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ctxStart := max(0, pre-3)
	ctxEnd := min(suf, 3)
	var out []string
	for _, l := range a[ctxStart:pre] {
		out = append(out, " "+l)
	}
	for _, l := range a[pre : len(a)-suf] {
		out = append(out, "-"+l)
	}
	for _, l := range b[pre : len(b)-suf] {
		out = append(out, "+"+l)
	}
	for _, l := range a[len(a)-suf : len(a)-suf+ctxEnd] {
		out = append(out, " "+l)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n@@ -%d,%d +%d,%d @@\n", name, name,
		ctxStart+1, len(a)-suf+ctxEnd-ctxStart, ctxStart+1, len(b)-suf+ctxEnd-ctxStart)
	for i, l := range out {
		if i == maxDiffLines {
			fmt.Fprintf(&sb, "[... %d more lines ...]\n", len(out)-maxDiffLines)
			break
		}
		sb.WriteString(l)
		sb.WriteByte('\n')
	}
	return sb.String()
}

func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
