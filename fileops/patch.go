package fileops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/tool"
)

type patchArgs struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

type patchData struct {
	Path           string `json:"path"`
	Replacements   int    `json:"replacements"`
	Diff           string `json:"diff,omitempty"`
	LinesAdded     int    `json:"lines_added"`
	LinesRemoved   int    `json:"lines_removed"`
	CandidateLines []int  `json:"candidate_lines,omitempty"`
}

func patchFile(ctx context.Context, inv *tool.Invocation, opts Options) (*tool.Output, error) {
	p, shown, err := target(inv)
	if err != nil {
		return nil, err
	}
	var a patchArgs
	if err := json.Unmarshal(inv.Args, &a); err != nil {
		return nil, fmt.Errorf("fileops: arguments: %w", err)
	}
	if a.OldString == "" {
		return failed(CodeNoMatch, "old_string is empty; give the exact text to replace", true, pathOnly{shown}), nil
	}
	fs := filesFor(inv.Env)
	out, err := patchWith(ctx, fs, p, shown, a, opts)
	return withNotes(out, err, fs)
}

func patchWith(ctx context.Context, fs files, p, shown string, a patchArgs, opts Options) (*tool.Output, error) {
	data, err := fs.readAll(ctx, p, opts.MaxReadBytes)
	if err != nil {
		return failure(err, shown, pathOnly{shown})
	}
	old := string(data)
	n := strings.Count(old, a.OldString)
	switch {
	case n == 0:
		cands := nearLines(old, a.OldString)
		msg := fmt.Sprintf("%s: old_string was not found; it must match exactly, including whitespace and indentation", shown)
		if len(cands) > 0 {
			msg += fmt.Sprintf("; its first line occurs (ignoring surrounding whitespace) at line(s) %s: read them and retry", joinInts(cands))
		} else {
			msg += "; read the file and copy the text exactly"
		}
		return failed(CodeNoMatch, msg, true, patchData{Path: shown, CandidateLines: cands}), nil
	case n > 1 && !a.ReplaceAll:
		cands := matchLines(old, a.OldString)
		msg := fmt.Sprintf("%s: old_string occurs %d times, at line(s) %s; include more surrounding text to make it unique, or set replace_all",
			shown, n, joinInts(cands))
		return failed(CodeMultipleMatches, msg, true, patchData{Path: shown, CandidateLines: cands}), nil
	}
	repl := strings.Replace(old, a.OldString, a.NewString, -1) // n is 1 unless replace_all
	if int64(len(repl)) > opts.MaxWriteBytes {
		return failure(tooLarge(int64(len(repl)), opts.MaxWriteBytes), shown, pathOnly{shown})
	}
	// The write is refused if the file changed since it was read here, so that a change
	// made in between is not lost (on roads that can compare digests).
	sum := sha256.Sum256(data)
	if _, err := fs.write(ctx, p, []byte(repl), hex.EncodeToString(sum[:])); err != nil {
		return failure(err, shown, pathOnly{shown})
	}
	es := lineDiff(splitLines(old), splitLines(repl))
	d := patchData{Path: shown, Replacements: n, Diff: unified(shown, es)}
	d.LinesAdded, d.LinesRemoved = counts(es)
	return &tool.Output{Data: d, Content: fmt.Sprintf("patched %s: %d replacement(s), +%d/-%d lines\n%s",
		shown, n, d.LinesAdded, d.LinesRemoved, d.Diff)}, nil
}

// matchLines returns the line numbers where the occurrences of s start (at most 50), in
// the order strings.Replace would replace them.
func matchLines(text, s string) []int {
	var out []int
	line, seen := 1, 0
	for from := 0; len(out) < 50; {
		i := strings.Index(text[from:], s)
		if i < 0 {
			break
		}
		pos := from + i
		line += strings.Count(text[seen:pos], "\n")
		seen = pos
		out = append(out, line)
		from = pos + len(s)
	}
	return out
}

// nearLines returns the lines (at most 20) that contain old's first non-blank line with
// surrounding whitespace ignored: where the model probably meant.
func nearLines(text, old string) []int {
	var first string
	for _, l := range strings.Split(old, "\n") {
		if strings.TrimSpace(l) != "" {
			first = strings.TrimSpace(l)
			break
		}
	}
	if first == "" {
		return nil
	}
	var out []int
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, first) || strings.Contains(strings.Join(strings.Fields(l), " "), strings.Join(strings.Fields(first), " ")) {
			out = append(out, i+1)
			if len(out) == 20 {
				break
			}
		}
	}
	return out
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}
