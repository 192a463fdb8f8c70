package fileops

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/airlock-dev/airlock/tool"
)

// Tool names of the byte tools: a whole file's bytes, for a front end that moves files as
// they are (the HTTP API's /files). They take the same road as read_file and write_file —
// the path policy with its reason codes, the size limits, approval, a receipt — and carry
// the bytes base64 encoded, so nothing is lost to a text encoding.
const (
	ReadBytes  = "read_bytes"
	WriteBytes = "write_bytes"
)

type bytesData struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"`
	Content string `json:"content_base64,omitempty"`
	Action  string `json:"action,omitempty"`
}

const readBytesInput = `{"type": "object", "additionalProperties": false, "required": ["path"], "properties": {
  "path": {"type": "string", "minLength": 1, "description": "File to read, relative to the workspace."},
  "head": {"type": "boolean", "description": "Return the size and SHA-256 only, not the content."}}}`

const writeBytesInput = `{"type": "object", "additionalProperties": false, "required": ["path", "content_base64"], "properties": {
  "path": {"type": "string", "minLength": 1, "description": "File to create or replace, relative to the workspace."},
  "content_base64": {"type": "string", "description": "The whole new content, base64 (standard, padded)."},
  "if_sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "Replace the file only if its SHA-256 is still this (else stale_file)."}}}`

const bytesOutput = `{"type": "object", "additionalProperties": false, "required": ["path"], "properties": {
  "path": {"type": "string"}, "size": {"type": "integer"}, "sha256": {"type": "string"},
  "content_base64": {"type": "string"}, "action": {"enum": ["created", "overwritten"]}}}`

func byteTools(opts Options) []tool.Definition {
	return []tool.Definition{
		{
			Name: ReadBytes, Risk: tool.RiskRead, ParallelSafe: true,
			Description: "Read a whole file's bytes, base64 encoded, with its size and SHA-256 (for binary files; read_file reads text).",
			InputSchema: json.RawMessage(readBytesInput), OutputSchema: json.RawMessage(bytesOutput),
			Paths: pathArg(tool.Read), Output: tool.OutputPolicy{Mode: tool.Full},
			Handler: func(ctx context.Context, inv *tool.Invocation) (*tool.Output, error) {
				return readBytes(ctx, inv, opts)
			},
		},
		{
			Name: WriteBytes, Risk: tool.RiskWrite, ParallelSafe: true,
			Description: "Create or replace a whole file with bytes given base64 encoded, atomically; with if_sha256, only if the file is still that content.",
			InputSchema: json.RawMessage(writeBytesInput), OutputSchema: json.RawMessage(bytesOutput),
			Paths: pathArg(tool.Write), Subject: writeBytesSubject,
			Handler: func(ctx context.Context, inv *tool.Invocation) (*tool.Output, error) {
				return writeBytes(ctx, inv, opts)
			},
		},
	}
}

func readBytes(ctx context.Context, inv *tool.Invocation, opts Options) (*tool.Output, error) {
	p, shown, err := target(inv)
	if err != nil {
		return nil, err
	}
	var a struct {
		Head bool `json:"head"`
	}
	if err := json.Unmarshal(inv.Args, &a); err != nil {
		return nil, fmt.Errorf("fileops: arguments: %w", err)
	}
	fs := filesFor(inv.Env)
	data, err := fs.readAll(ctx, p, opts.MaxReadBytes)
	if err != nil {
		out, ferr := failure(err, shown, pathOnly{shown})
		return withNotes(out, ferr, fs)
	}
	sum := sha256.Sum256(data)
	d := bytesData{Path: shown, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
	if !a.Head {
		d.Content = base64.StdEncoding.EncodeToString(data)
	}
	return withNotes(&tool.Output{Data: d, Content: fmt.Sprintf("%s: %d bytes, sha256 %s", shown, d.Size, d.SHA256)}, nil, fs)
}

func writeBytes(ctx context.Context, inv *tool.Invocation, opts Options) (*tool.Output, error) {
	p, shown, err := target(inv)
	if err != nil {
		return nil, err
	}
	var a struct {
		Content  string `json:"content_base64"`
		IfSHA256 string `json:"if_sha256"`
	}
	if err := json.Unmarshal(inv.Args, &a); err != nil {
		return nil, fmt.Errorf("fileops: arguments: %w", err)
	}
	data, err := base64.StdEncoding.DecodeString(a.Content)
	if err != nil {
		return failed("invalid_arguments", "content_base64: not standard padded base64: "+err.Error(), false, pathOnly{shown}), nil
	}
	if int64(len(data)) > opts.MaxWriteBytes {
		return failure(tooLarge(int64(len(data)), opts.MaxWriteBytes), shown, pathOnly{shown})
	}
	fs := filesFor(inv.Env)
	created, err := fs.write(ctx, p, data, a.IfSHA256)
	if err != nil {
		out, ferr := failure(err, shown, pathOnly{shown})
		return withNotes(out, ferr, fs)
	}
	sum := sha256.Sum256(data)
	d := bytesData{Path: shown, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]), Action: "overwritten"}
	if created {
		d.Action = "created"
	}
	return withNotes(&tool.Output{Data: d, Content: fmt.Sprintf("%s %s: %d bytes, sha256 %s", d.Action, shown, d.Size, d.SHA256)}, nil, fs)
}

// writeBytesSubject shows a person the path, the size and hash of the bytes, and the
// precondition: the bytes themselves may not be text.
func writeBytesSubject(raw json.RawMessage) (tool.Subject, error) {
	var a struct {
		Path     string `json:"path"`
		Content  string `json:"content_base64"`
		IfSHA256 string `json:"if_sha256"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return tool.Subject{}, fmt.Errorf("fileops: arguments: %w", err)
	}
	data, _ := base64.StdEncoding.DecodeString(a.Content)
	sum := sha256.Sum256(data)
	fields := []tool.Field{{Name: "path", Value: a.Path},
		{Name: "content", Value: fmt.Sprintf("%d bytes, sha256 %s", len(data), hex.EncodeToString(sum[:]))}}
	if a.IfSHA256 != "" {
		fields = append(fields, tool.Field{Name: "only if the file is", Value: "sha256 " + a.IfSHA256})
	}
	return tool.Subject{Fields: fields, Key: tool.ArgumentsKey(raw),
		Session: "this exact write again: the same bytes to the same path; any other content, or another path, asks again"}, nil
}
