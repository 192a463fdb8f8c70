package fileops

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/tool"
)

type readArgs struct {
	Offset int `json:"offset"`
	Limit  int `json:"limit"`
}

type readData struct {
	Path       string `json:"path"`
	FirstLine  int    `json:"first_line"`
	LastLine   int    `json:"last_line"`
	TotalLines int    `json:"total_lines"`
	More       bool   `json:"more"`
	Truncated  bool   `json:"truncated"`
	Binary     bool   `json:"binary"`
	Size       int64  `json:"size"`
	SHA256     string `json:"sha256,omitempty"`
}

type pathOnly struct {
	Path string `json:"path"`
}

func readFile(ctx context.Context, inv *tool.Invocation, opts Options) (*tool.Output, error) {
	p, shown, err := target(inv)
	if err != nil {
		return nil, err
	}
	var a readArgs
	if err := json.Unmarshal(inv.Args, &a); err != nil {
		return nil, fmt.Errorf("fileops: arguments: %w", err)
	}
	first := max(a.Offset, 1)
	last := 0
	if a.Limit > 0 {
		last = first + a.Limit - 1
	}
	fs := filesFor(inv.Env)
	out, err := readWith(ctx, fs, p, shown, first, last, opts)
	return withNotes(out, err, fs)
}

func readWith(ctx context.Context, fs files, p, shown string, first, last int, opts Options) (*tool.Output, error) {
	w, err := fs.window(ctx, p, first, last, opts.MaxReadBytes)
	if err != nil {
		return failure(err, shown, pathOnly{shown})
	}
	d := readData{Path: shown, FirstLine: first, TotalLines: w.total, Size: w.size, Binary: w.binary, SHA256: w.sha256}
	if w.binary {
		d.LastLine = first - 1
		d.More = w.total > 0
		return &tool.Output{Data: d, Content: fmt.Sprintf(
			"%s is a binary file (%d bytes, NUL bytes in its first 8 KiB); its content is not shown", shown, w.size)}, nil
	}
	data := w.data
	if int64(len(data)) > opts.MaxReadBytes {
		d.Truncated = true
		data = data[:opts.MaxReadBytes]
		if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
			data = data[:i+1] // whole lines only, unless one line alone is over the limit
		}
	}
	lines := splitLines(string(data))
	var b strings.Builder
	for i, l := range lines {
		b.WriteString(strconv.Itoa(first + i))
		b.WriteByte('|')
		b.WriteString(strings.TrimSuffix(l, "\n"))
		b.WriteByte('\n')
	}
	d.LastLine = first + len(lines) - 1
	if d.Truncated && len(lines) > 0 && !strings.HasSuffix(lines[len(lines)-1], "\n") {
		d.LastLine-- // the last line shown is cut: it is not read yet
	}
	d.More = d.LastLine < w.total
	switch {
	case w.total == 0:
		b.WriteString("(empty file)\n")
	case len(lines) == 0:
		fmt.Fprintf(&b, "(no lines from %d: the file has %d lines)\n", first, w.total)
	case d.Truncated:
		fmt.Fprintf(&b, "(truncated at %d bytes: the read limit; %d lines in all; continue with offset=%d)\n",
			opts.MaxReadBytes, w.total, d.LastLine+1)
	case d.More:
		fmt.Fprintf(&b, "(%d lines in all; continue with offset=%d)\n", w.total, d.LastLine+1)
	}
	return &tool.Output{Content: b.String(), Data: d, Truncated: d.Truncated}, nil
}
