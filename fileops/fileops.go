package fileops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/tool"
)

// Tool names.
const (
	ReadFile    = "read_file"
	WriteFile   = "write_file"
	Patch       = "patch"
	SearchFiles = "search_files"
)

// Error codes a handler reports with Output.Status failed, beside pathpolicy's.
const (
	CodeNoMatch         = "no_match"
	CodeMultipleMatches = "multiple_matches"
	CodeNotRegular      = "not_a_regular_file"
	CodeNotDirectory    = "not_a_directory"
	CodeBadPattern      = "invalid_pattern"
	CodeIOError         = "io_error"
	// CodePermissionDenied: the environment's user may not read or write there. Retrying
	// does not help; a person must give that user access.
	CodePermissionDenied = "permission_denied"
)

// Options are the limits the tools apply; normally [OptionsFrom] the path policy's config.
type Options struct {
	// MaxReadBytes bounds what read_file returns and what patch and write_file read of an
	// existing file.
	MaxReadBytes int64
	// MaxWriteBytes bounds the file write_file and patch produce.
	MaxWriteBytes int64
	// DenyNames are left out of search results and never opened by a search (the policy's
	// deny_names).
	DenyNames []string
	// Hide, when set, also leaves out of search results every path (absolute, as the
	// environment sees it) for which it returns true: the ledger, the config file.
	Hide func(path string) bool
	// MaxSearchResults is the ceiling of search_files' max_results.
	MaxSearchResults int
}

// DefaultMaxSearchResults is search_files' max_results when a call sets none.
const DefaultMaxSearchResults = 100

// OptionsFrom takes the limits and deny names from a path policy configuration.
func OptionsFrom(cfg pathpolicy.Config) Options {
	return Options{MaxReadBytes: cfg.MaxReadBytes, MaxWriteBytes: cfg.MaxWriteBytes, DenyNames: cfg.DenyNames}
}

func (o Options) withDefaults() Options {
	if o.MaxReadBytes <= 0 {
		o.MaxReadBytes = pathpolicy.DefaultMaxReadBytes
	}
	if o.MaxWriteBytes <= 0 {
		o.MaxWriteBytes = pathpolicy.DefaultMaxWriteBytes
	}
	if o.DenyNames == nil {
		o.DenyNames = pathpolicy.DefaultDenyNames
	}
	if o.MaxSearchResults <= 0 {
		o.MaxSearchResults = 1000
	}
	return o
}

// Register adds the four file tools to reg.
func Register(reg *tool.Registry, opts Options) error {
	opts = opts.withDefaults()
	s := &searcher{opts: opts}
	defs := []tool.Definition{
		{
			Name: ReadFile, Risk: tool.RiskRead, ParallelSafe: true,
			Description: "Read a text file. Returns numbered lines as N|text, the file's total line count and whether more lines remain. " +
				"Use offset and limit to read a large file in parts. Binary files are reported, not shown.",
			InputSchema: json.RawMessage(readInput), OutputSchema: json.RawMessage(readOutput),
			Paths:   pathArg(tool.Read),
			Handler: func(ctx context.Context, inv *tool.Invocation) (*tool.Output, error) { return readFile(ctx, inv, opts) },
		},
		{
			Name: WriteFile, Risk: tool.RiskWrite, ParallelSafe: true,
			Description: "Create or replace a whole file with the given content, atomically (readers never see half a file). " +
				"Missing parent directories are created. To change part of a file, use patch.",
			InputSchema: json.RawMessage(writeInput), OutputSchema: json.RawMessage(writeOutput),
			Paths: pathArg(tool.Write), Subject: writeSubject,
			Preview: func(ctx context.Context, inv *tool.Invocation) (string, error) { return previewWrite(ctx, inv, opts) },
			Handler: func(ctx context.Context, inv *tool.Invocation) (*tool.Output, error) {
				return writeFile(ctx, inv, opts)
			},
		},
		{
			Name: Patch, Risk: tool.RiskWrite, ParallelSafe: true,
			Description: "Replace an exact piece of text in a file. old_string must match exactly once (including whitespace) unless " +
				"replace_all is true; otherwise the call fails and lists the lines where candidates are. Returns a unified diff.",
			InputSchema: json.RawMessage(patchInput), OutputSchema: json.RawMessage(patchOutput),
			Paths: pathArg(tool.Write), Subject: patchSubject,
			Preview: func(ctx context.Context, inv *tool.Invocation) (string, error) { return previewPatch(ctx, inv, opts) },
			Handler: func(ctx context.Context, inv *tool.Invocation) (*tool.Output, error) {
				return patchFile(ctx, inv, opts)
			},
		},
		{
			Name: SearchFiles, Risk: tool.RiskRead, ParallelSafe: true,
			Description: "Search file contents for a regular expression (target \"content\", the default) or file names for a glob " +
				"(target \"files\") beneath a directory. Returns path:line:text matches, at most max_results.",
			InputSchema: json.RawMessage(searchInput), OutputSchema: json.RawMessage(searchOutput),
			Paths:   searchPaths,
			Handler: s.search,
		},
	}
	defs = append(defs, byteTools(opts)...)
	for _, d := range defs {
		d.Toolset = Toolset
		if d.Name == SearchFiles {
			d.Needs = []tool.Need{{Programs: []string{"rg", "grep"}, Why: "content search runs ripgrep, or grep without it"}}
		}
		if err := reg.Register(d); err != nil {
			return fmt.Errorf("fileops: %w", err)
		}
	}
	return nil
}

// Toolset is the toolset the file tools belong to.
const Toolset = "files"

func pathArg(access tool.Access) func(json.RawMessage) ([]tool.PathRef, error) {
	return func(args json.RawMessage) ([]tool.PathRef, error) {
		var a struct {
			Path string `json:"path"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, fmt.Errorf("fileops: arguments: %w", err)
		}
		return []tool.PathRef{{Arg: "path", Path: a.Path, Access: access}}, nil
	}
}

func searchPaths(args json.RawMessage) ([]tool.PathRef, error) {
	var a struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, fmt.Errorf("fileops: arguments: %w", err)
	}
	if a.Path == "" {
		a.Path = "."
	}
	return []tool.PathRef{{Arg: "path", Path: a.Path, Access: tool.Read}}, nil
}

// errNoDecision means the pipeline called a handler without the policy's resolved path: a
// wiring mistake, never something to work around by reading the raw argument.
var errNoDecision = errors.New("fileops: no resolved path for argument \"path\": the path policy did not run")

// target returns the policy's resolved path and the name to show the model.
func target(inv *tool.Invocation) (abs, shown string, err error) {
	rp, ok := inv.Paths["path"]
	if !ok || rp.Resolved == "" || !path.IsAbs(rp.Resolved) || inv.Env == nil {
		return "", "", errNoDecision
	}
	return path.Clean(rp.Resolved), display(inv.Env, rp.Resolved), nil
}

// display shows p relative to the workspace when it lies inside.
func display(env backend.Environment, p string) string {
	ws := path.Clean(env.Describe().Workspace)
	p = path.Clean(p)
	if p == ws {
		return "."
	}
	if backend.Within(ws, p) {
		return strings.TrimPrefix(p, strings.TrimSuffix(ws, "/")+"/")
	}
	return p
}

func failed(code, msg string, retryable bool, data any) *tool.Output {
	return &tool.Output{Content: msg, Data: data, Status: tool.StatusFailed, ErrorCode: code, ErrorMessage: msg, Retryable: retryable}
}

// failure turns a filesystem error into the output the model sees.
func failure(err error, shown string, data any) (*tool.Output, error) {
	var fe *fsError
	if !errors.As(err, &fe) {
		return nil, err
	}
	switch fe.code {
	case pathpolicy.CodeNotFound:
		return failed(fe.code, shown+": no such file; check the path with search_files (target \"files\")", true, data), nil
	case pathpolicy.CodeSymlinkEscape:
		return failed(fe.code, shown+": the path changed into or through a symbolic link after it was checked; the operation was refused", false, data), nil
	case pathpolicy.CodeForbiddenPath:
		return failed(fe.code, shown+": the file has other hard links, whose names may lie outside the allowed directories; it is neither read nor written through this name ("+fe.msg+")", false, data), nil
	case session.CodeStaleFile:
		return failed(fe.code, shown+": the file changed since it was read for this call; read it again and retry", true, data), nil
	case CodeNotRegular:
		return failed(fe.code, shown+": not a regular file (a directory or a device); name a file", true, data), nil
	case CodeNotDirectory:
		return failed(fe.code, shown+": a parent of this path is a file, not a directory", true, data), nil
	case pathpolicy.CodeTooLarge:
		return failed(fe.code, shown+": "+fe.msg, true, data), nil
	case CodePermissionDenied:
		return failed(fe.code, shown+": "+fe.msg, false, data), nil
	default:
		return failed(CodeIOError, shown+": "+fe.Error(), true, data), nil
	}
}
