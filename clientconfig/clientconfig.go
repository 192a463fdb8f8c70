// Package clientconfig owns the configuration Airlock writes into coding agents' own
// settings files, so that one command (`airlock install CLIENT`) plugs Airlock in as the
// agent's hands: the client's MCP server entry for `airlock mcp`, and the client settings
// that turn off the client's own shell and edit tools so that every action goes through
// Airlock.
//
// A user's settings are theirs: a file is read, Airlock's keys are merged into it (lists
// gain entries, never lose them; a table named airlock is replaced whole), and the result
// is checked by parsing it back before anything is written, whole, by rename. JSON files
// are re-encoded (their keys come out sorted, every entry kept); TOML files are edited as
// text, so the user's comments and order survive. Plan computes every change without
// touching the disk, so `--print` changes nothing.
package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/tool"
)

// Clients Airlock can install into.
const (
	ClaudeCode = "claude-code"
	Codex      = "codex"
	Cursor     = "cursor"
	GeminiCLI  = "gemini-cli"
)

// Clients lists them in the order help shows.
var Clients = []string{ClaudeCode, Codex, Cursor, GeminiCLI}

// Scopes.
const (
	Project = "project"
	User    = "user"
)

// ServerName is the MCP server's name in every client (Claude Code's tools become
// mcp__airlock__NAME).
const ServerName = "airlock"

// Target says where and what to install.
type Target struct {
	Client string
	// Scope is Project or User; empty takes the client's usual one (user for Codex,
	// project for the rest).
	Scope string
	// Home is the user's home directory; ProjectDir the project's root.
	Home, ProjectDir string
	// CodexHome is $CODEX_HOME when set.
	CodexHome string
	// Command and Args start the server: the airlock binary, "mcp", "--config", FILE.
	Command string
	Args    []string
	// ToolTimeoutSec is the client's per-call timeout where it has one in its config
	// (default: as long as a command's, backend.DefaultTimeout).
	ToolTimeoutSec int
	// ClientTools are the tools the installed client offers its model (found by running it
	// against a loopback probe, package clientprobe); nil when it could not be run. Deny
	// rules are written only for tools it has: a rule naming a tool it lacks is warned about
	// on every run.
	ClientTools []string
}

// Change is one file's new content.
type Change struct {
	Path    string
	Content []byte
	// Existed is false for a file that will be created.
	Existed bool
}

// Plan computes the changes for t without writing anything; notes say what the client's
// files cannot express.
func Plan(t Target) ([]Change, []string, error) {
	if t.Scope == "" {
		t.Scope = Project
		if t.Client == Codex {
			t.Scope = User
		}
	}
	if t.Scope != Project && t.Scope != User {
		return nil, nil, fmt.Errorf("scope %q: expected project or user", t.Scope)
	}
	if t.Command == "" {
		return nil, nil, errors.New("the server command is required")
	}
	if t.ToolTimeoutSec <= 0 {
		t.ToolTimeoutSec = int(backend.DefaultTimeout / time.Second)
	}
	base := t.ProjectDir
	if t.Scope == User {
		base = t.Home
	}
	if base == "" {
		return nil, nil, fmt.Errorf("%s scope needs its directory", t.Scope)
	}
	switch t.Client {
	case ClaudeCode:
		return planClaude(t, base)
	case Codex:
		return planCodex(t, base)
	case Cursor:
		c, err := mergeJSONFile(filepath.Join(base, ".cursor", "mcp.json"), func(m map[string]any) {
			setServer(m, "mcpServers", map[string]any{"command": t.Command, "args": t.Args, "env": map[string]any{}})
		})
		return wrap(c), []string{"Cursor has no settings-file switch for its own terminal and edit tools: in Cursor's settings, " +
			"turn off auto-run for its terminal and edit tools (or deny them) so that the agent uses the airlock tools."}, err
	case GeminiCLI:
		c, err := mergeJSONFile(filepath.Join(base, ".gemini", "settings.json"), func(m map[string]any) {
			setServer(m, "mcpServers", map[string]any{"command": t.Command, "args": t.Args, "timeout": t.ToolTimeoutSec * 1000})
			tools := object(m, "tools")
			tools["exclude"] = union(tools["exclude"], "run_shell_command", "write_file", "replace")
		})
		return wrap(c), nil, err
	}
	return nil, nil, fmt.Errorf("unknown client %q: expected one of %s", t.Client, strings.Join(Clients, ", "))
}

func wrap(c Change) []Change {
	if c.Path == "" {
		return nil
	}
	return []Change{c}
}

// ClaudeOwnTools are the names Claude Code has given its own shell, file and fetch tools
// across versions; every one the installed version has is denied, so the model acts only
// through Airlock (where the path policy refuses .git/config and .env, and the URL guard
// decides fetches).
var ClaudeOwnTools = []string{
	"Bash", "BashOutput", "KillShell", "KillBash", // shell
	"Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "NotebookRead", "Grep", "Glob", "LS", // files
	"WebFetch", "WebSearch", // fetch
}

// claudeMeasured are the own tools Claude Code 2.1.197 offered its model here. A probe does
// not always see them all (Grep and Glob were offered with a user's settings and not with a
// fresh HOME), so these are denied whenever the client is this family of version, and alone
// when the installed client could not be run to ask.
var claudeMeasured = []string{"Bash", "Read", "Write", "Edit", "NotebookEdit", "Grep", "Glob", "WebFetch", "WebSearch"}

// claudeDenied are the deny rules for t: the own tools the client has.
func claudeDenied(t Target) ([]string, []string) {
	if t.ClientTools == nil {
		return claudeMeasured, []string{"Claude Code could not be run to list its tools: denied those of version 2.1.197 (" +
			strings.Join(claudeMeasured, ", ") + "); run airlock install claude-code --check once it runs"}
	}
	var deny []string
	for _, name := range ClaudeOwnTools {
		if slices.Contains(t.ClientTools, name) || slices.Contains(claudeMeasured, name) {
			deny = append(deny, name)
		}
	}
	return deny, nil
}

func planClaude(t Target, base string) ([]Change, []string, error) {
	server := map[string]any{"type": "stdio", "command": t.Command, "args": t.Args, "env": map[string]any{}}
	serversFile := filepath.Join(base, ".mcp.json")
	if t.Scope == User {
		serversFile = filepath.Join(base, ".claude.json")
	}
	servers, err := mergeJSONFile(serversFile, func(m map[string]any) { setServer(m, "mcpServers", server) })
	if err != nil {
		return nil, nil, err
	}
	deny, notes := claudeDenied(t)
	settings, err := mergeJSONFile(filepath.Join(base, ".claude", "settings.json"), func(m map[string]any) {
		perms := object(m, "permissions")
		perms["deny"] = union(perms["deny"], deny...)
		perms["allow"] = union(perms["allow"], "mcp__"+ServerName+"__*")
		if t.Scope == Project {
			// A project's .mcp.json servers start only once approved; this is that approval.
			m["enabledMcpjsonServers"] = union(m["enabledMcpjsonServers"], ServerName)
		}
	})
	if err != nil {
		return nil, nil, err
	}
	return []Change{servers, settings}, append(notes, fmt.Sprintf("set MCP_TOOL_TIMEOUT=%d000 in the environment Claude Code starts from "+
		"for a tool timeout above Airlock's own waits (%d s by default)", t.ToolTimeoutSec, int(tool.CallWaitMax.Seconds()))), nil
}

// setServer puts Airlock's entry under m[key][ServerName], replacing an older one whole.
func setServer(m map[string]any, key string, server map[string]any) {
	object(m, key)[ServerName] = server
}

// object returns m[key] as an object, creating it (or replacing a non-object, which no
// client reads there).
func object(m map[string]any, key string) map[string]any {
	if o, ok := m[key].(map[string]any); ok {
		return o
	}
	o := map[string]any{}
	m[key] = o
	return o
}

// union returns the list v (any JSON array) with add appended where missing, in order.
func union(v any, add ...string) []any {
	list, _ := v.([]any)
	out := append([]any(nil), list...)
	for _, a := range add {
		if !slices.ContainsFunc(out, func(x any) bool { return x == a }) {
			out = append(out, a)
		}
	}
	return out
}

// mergeJSONFile reads path (an object, or nothing), applies edit and returns the new
// content. A file that is not a JSON object is an error: it is never overwritten.
func mergeJSONFile(path string, edit func(map[string]any)) (Change, error) {
	m := map[string]any{}
	b, err := os.ReadFile(path)
	existed := err == nil
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return Change{}, fmt.Errorf("read %s: %w", path, err)
	case len(bytes.TrimSpace(b)) > 0:
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return Change{}, fmt.Errorf("%s is not a JSON object (%w): fix or move it; nothing was changed", path, err)
		}
	}
	edit(m)
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return Change{}, fmt.Errorf("encode %s: %w", path, err)
	}
	return Change{Path: path, Content: out.Bytes(), Existed: existed}, nil
}

// Apply writes the changes, each whole by rename, keeping an existing file's mode. It
// stops at the first failure; files written before it stay written (each is complete).
func Apply(changes []Change) error {
	for _, c := range changes {
		mode := os.FileMode(0o644)
		if fi, err := os.Stat(c.Path); err == nil {
			mode = fi.Mode().Perm()
		}
		if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
			return fmt.Errorf("write %s: %w", c.Path, err)
		}
		f, err := os.CreateTemp(filepath.Dir(c.Path), "."+filepath.Base(c.Path)+".airlock-*")
		if err != nil {
			return fmt.Errorf("write %s: %w", c.Path, err)
		}
		_, werr := f.Write(c.Content)
		serr := f.Sync()
		cerr := f.Close()
		if err := errors.Join(werr, serr, cerr, os.Chmod(f.Name(), mode)); err != nil {
			_ = os.Remove(f.Name())
			return fmt.Errorf("write %s: %w", c.Path, err)
		}
		if err := os.Rename(f.Name(), c.Path); err != nil {
			_ = os.Remove(f.Name())
			return fmt.Errorf("write %s: %w", c.Path, err)
		}
	}
	return nil
}
