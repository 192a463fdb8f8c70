package fileops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/tool"
)

type writeArgs struct {
	Content string `json:"content"`
}

type writeData struct {
	Path         string `json:"path"`
	Action       string `json:"action"`
	BytesWritten int    `json:"bytes_written"`
	LinesAdded   int    `json:"lines_added"`
	LinesRemoved int    `json:"lines_removed"`
}

func writeFile(ctx context.Context, inv *tool.Invocation, opts Options) (*tool.Output, error) {
	p, shown, err := target(inv)
	if err != nil {
		return nil, err
	}
	var a writeArgs
	if err := json.Unmarshal(inv.Args, &a); err != nil {
		return nil, fmt.Errorf("fileops: arguments: %w", err)
	}
	if int64(len(a.Content)) > opts.MaxWriteBytes {
		return failure(tooLarge(int64(len(a.Content)), opts.MaxWriteBytes), shown, pathOnly{shown})
	}
	fs := filesFor(inv.Env)
	out, err := writeWith(ctx, fs, p, shown, a, opts)
	return withNotes(out, err, fs)
}

func writeWith(ctx context.Context, fs files, p, shown string, a writeArgs, opts Options) (*tool.Output, error) {
	// The old content only feeds the summary; a file too large to compare is still replaced.
	old, err := fs.readAll(ctx, p, opts.MaxReadBytes)
	compared := err == nil
	var fe *fsError
	if err != nil && (!errors.As(err, &fe) || fe.code != pathpolicy.CodeNotFound && fe.code != pathpolicy.CodeTooLarge) {
		return failure(err, shown, pathOnly{shown})
	}
	created, err := fs.write(ctx, p, []byte(a.Content), "")
	if err != nil {
		return failure(err, shown, pathOnly{shown})
	}
	d := writeData{Path: shown, Action: "overwritten", BytesWritten: len(a.Content)}
	if created {
		d.Action = "created"
	}
	summary := ""
	if compared || created {
		d.LinesAdded, d.LinesRemoved = counts(lineDiff(splitLines(string(old)), splitLines(a.Content)))
		summary = fmt.Sprintf(" (+%d/-%d lines)", d.LinesAdded, d.LinesRemoved)
	}
	return &tool.Output{Data: d, Content: fmt.Sprintf("%s %s: %d bytes%s", d.Action, shown, d.BytesWritten, summary)}, nil
}
