package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/pipeline"
)

// CodeStaleFile is the reason a write over an unseen change is refused.
const CodeStaleFile = "stale_file"

// absent is the hash recorded for a file that did not exist.
const absent = "absent"

// StaleCheck refuses writes to files that changed since this session last read or wrote
// them, and records what the session sees. It is a pipeline pre-hook (the check) and
// post-hook (the record). The path it watches is each tool's "path" argument as policy
// resolved it.
type StaleCheck struct {
	Store *Store
	// Readers and Writers name the tools whose successful calls record a file's hash;
	// Writers are also checked before they run.
	Readers []string
	Writers []string
}

var (
	_ pipeline.PreHook  = (*StaleCheck)(nil)
	_ pipeline.PostHook = (*StaleCheck)(nil)
	_ pipeline.Observer = (*StaleCheck)(nil)
)

// Name names the hook in receipts.
func (g *StaleCheck) Name() string { return "stale_file" }

func has(list []string, name string) bool {
	for _, n := range list {
		if n == name {
			return true
		}
	}
	return false
}

func targetPath(req *pipeline.Request) string {
	for _, p := range req.Paths {
		if p.Arg == "path" {
			return p.Resolved
		}
	}
	return ""
}

// Before refuses a write whose target changed since the session last saw it, unless the
// call passes force: true. A file the session never saw is not checked.
func (g *StaleCheck) Before(ctx context.Context, req *pipeline.Request) (*pipeline.Block, error) {
	if !has(g.Writers, req.Call.Name) {
		return nil, nil
	}
	var a struct {
		Force bool `json:"force"`
	}
	_ = json.Unmarshal(req.Args, &a)
	p := targetPath(req)
	if a.Force || p == "" {
		return nil, nil
	}
	seen, ok := g.Store.FileHash(p)
	if !ok {
		return nil, nil
	}
	now, err := Hash(ctx, req.Env, p)
	if err != nil {
		return nil, err
	}
	if now == seen {
		return nil, nil
	}
	return &pipeline.Block{
		Code:      CodeStaleFile,
		Retryable: true,
		Message: fmt.Sprintf("%s changed since this session last read or wrote it (content sha256 now %s); "+
			"read it again and redo the change, or pass \"force\": true to overwrite", p, now),
	}, nil
}

// Observes reports whether After looks at the tool's calls: the readers' and the writers'.
func (g *StaleCheck) Observes(tool string) bool { return has(g.Readers, tool) || has(g.Writers, tool) }

// After records the hash of what a successful read or write left at its path.
func (g *StaleCheck) After(ctx context.Context, req *pipeline.Request, res pipeline.Result) {
	if req == nil || res.Status != pipeline.StatusOK || !g.Observes(req.Call.Name) {
		return
	}
	p := targetPath(req)
	if p == "" {
		return
	}
	// A read reports the digest of the whole file it read: that is what the model saw, and
	// recording it needs no second read (one that would also miss a change made in between).
	if has(g.Readers, req.Call.Name) {
		if m, ok := res.Data.(map[string]any); ok {
			if h, ok := m["sha256"].(string); ok && len(h) == 64 {
				g.Store.SetFileHash(p, h)
				return
			}
		}
	}
	if h, err := Hash(ctx, req.Env, p); err == nil {
		g.Store.SetFileHash(p, h)
	}
}

// hashByDescriptorBytes is the largest file a helper hashes by descriptor.
const hashByDescriptorBytes = 8 << 20

// Hash returns the SHA-256 of the file at path inside env, or "absent" when there is none.
// It runs in the environment, so it sees what the tools see (a container's or a remote
// host's file).
func Hash(ctx context.Context, env backend.Environment, path string) (string, error) {
	// A resident helper hashes by descriptor, with no process; what it refuses to open
	// (a link, a file with several names, a large file) is hashed by the script below.
	if fo, ok := env.(backend.FileOps); ok {
		res, err := fo.FileOp(ctx, backend.FileRequest{Op: backend.FileRead, Path: path, MaxBytes: hashByDescriptorBytes})
		var fe *backend.FileError
		switch {
		case err == nil && res.SHA256 != "":
			return res.SHA256, nil
		case errors.As(err, &fe) && fe.Code == backend.FileNotFound:
			return absent, nil
		}
	}
	// The path travels as an argument, never inside the script.
	script := `if [ -f "$1" ]; then sha256sum < "$1"; else echo ` + absent + `; fi`
	res, err := env.Exec(ctx, backend.Request{Argv: []string{"sh", "-c", script, "sh", path}})
	if err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	out := strings.Fields(string(res.Stdout))
	if res.ExitCode != 0 || len(out) == 0 {
		return "", fmt.Errorf("hash %s: exit %d: %s", path, res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	return out[0], nil
}
