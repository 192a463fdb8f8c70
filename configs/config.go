package configs

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/metrics"
	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/plan"
	"github.com/airlock-dev/airlock/schema"
	"github.com/airlock-dev/airlock/telemetry"
	"github.com/airlock-dev/airlock/urlguard"
)

//go:embed *.schema.json
var schemaFiles embed.FS

// DefaultFile is the config file used when none is named and it exists in the current
// directory.
const DefaultFile = "airlock.toml"

// Config is the whole configuration. Relative paths in it are resolved against Dir.
type Config struct {
	Environment Environment       `toml:"environment"`
	Ledger      Ledger            `toml:"ledger"`
	Tools       Tools             `toml:"tools"`
	Approvals   Approvals         `toml:"approvals"`
	Policy      pathpolicy.Config `toml:"policy"`
	Network     urlguard.Config   `toml:"network"`
	Session     Session           `toml:"session"`
	Jobs        Jobs              `toml:"jobs"`
	MCP         MCP               `toml:"mcp"`
	Serve       Serve             `toml:"serve"`
	Metrics     metrics.Config    `toml:"metrics"`
	Telemetry   telemetry.Config  `toml:"telemetry"`
	// Plan holds every session to ordered steps (package plan); nil: no plan.
	Plan *plan.Spec `toml:"plan"`

	// Dir is the directory relative paths are taken from: the config file's directory, or
	// the current directory when there is no file. It is not read from TOML.
	Dir string `toml:"-"`
	// File is the path the config was loaded from, empty for defaults.
	File string `toml:"-"`
}

// Environment selects and configures the backend.
type Environment struct {
	Type           string           `toml:"type"`
	Workspace      string           `toml:"workspace"`
	Timeout        backend.Duration `toml:"timeout"`
	MaxOutputBytes int64            `toml:"max_output_bytes"`
	EnvPassthrough []string         `toml:"env_passthrough"`
	KillGrace      backend.Duration `toml:"kill_grace"`

	// sections are the backends' own tables, [environment.KIND], each decoded into the type
	// its record's NewConfig returns (see [backend.Record]); kinds absent from the file hold
	// their defaults. The config never names a backend: the records say what exists.
	sections map[string]any
}

// Section returns the decoded [environment.KIND] table of a registered backend, with its
// defaults where the file says nothing, or nil for an unknown kind. Paths in it are as
// written; the engine resolves them against the config file (a section that is a
// [backend.Resolver]).
func (e *Environment) Section(kind string) any {
	if s, ok := e.sections[kind]; ok {
		return s
	}
	r, ok := backend.Lookup(kind)
	if !ok {
		return nil
	}
	if e.sections == nil {
		e.sections = map[string]any{}
	}
	s := r.NewConfig()
	e.sections[kind] = s
	return s
}

// Ledger says where receipts go. An empty Path means the user's state directory (see
// [Config.StateDir]), outside the workspace, so that nothing a command does to the
// workspace can reach the receipts.
type Ledger struct {
	Path           string `toml:"path"`
	StoreArguments bool   `toml:"store_arguments"`
}

// Session is the [session] table: how the runtime keeps agent sessions.
type Session struct {
	// IdleTTL closes a session that had no call for this long (its container, its cached
	// approvals and its jobs end with it); 0 keeps sessions until they are closed.
	IdleTTL backend.Duration `toml:"idle_ttl"`
}

// Tools holds settings shared by every tool.
type Tools struct {
	MaxOutputChars int `toml:"max_output_chars"`
	// Enabled names the toolsets offered: files, terminal, jobs, web.
	Enabled []string `toml:"enabled"`
	// OutputMode overrides how a tool's output reaches the model, by tool name: full,
	// head_tail or summary_only (the runtime checks the names against the tools offered).
	OutputMode map[string]string `toml:"output_mode"`
}

// Default returns the configuration used when no file is given; Load starts from it.
func Default() Config {
	return Config{
		Environment: Environment{
			Type:           "local",
			Workspace:      ".",
			Timeout:        backend.Duration(backend.DefaultTimeout),
			MaxOutputBytes: backend.DefaultMaxOutputBytes,
			EnvPassthrough: append([]string(nil), backend.DefaultPassthrough...),
			KillGrace:      backend.Duration(backend.DefaultKillGrace),
		},
		Ledger:    Ledger{},
		Tools:     Tools{MaxOutputChars: 50000, Enabled: append([]string(nil), Toolsets...)},
		Jobs:      defaultJobs(),
		MCP:       defaultMCP(),
		Serve:     defaultServe(),
		Approvals: defaultApprovals(),
		Policy:    pathpolicy.DefaultConfig(),
		Network:   urlguard.DefaultConfig(),
		Session:   Session{IdleTTL: backend.Duration(30 * time.Minute)},
	}
}

// Approvals is the [approvals] table: the approval gate's settings, and how a batch of calls
// is scheduled once approved.
type Approvals struct {
	approval.Config
	// NeverParallel names tools that run alone: everything before them finishes first and
	// nothing after them starts until they end.
	NeverParallel []string `toml:"never_parallel"`
	// PathScoped names the tools whose conflicts are judged by the paths they touch; a tool
	// outside the list that is not parallel-safe runs alone among calls that touch paths.
	PathScoped []string `toml:"path_scoped"`
	// MaxToolWorkers bounds how many calls of a batch run at once.
	MaxToolWorkers int `toml:"max_tool_workers"`
}

// defaultApprovals is manual mode with writes in the workspace allowed: read-only and
// workspace-writing commands run, anything riskier (network, scripts and build tools,
// dangerous commands) waits for a person, and is refused when nobody can answer. The
// hard-deny list is refused in every mode.
func defaultApprovals() Approvals {
	a := approval.DefaultConfig()
	a.AllowWrite = true
	return Approvals{
		Config:         a,
		PathScoped:     []string{"terminal", "read_file", "write_file", "patch", "search_files"},
		MaxToolWorkers: 8,
	}
}

// Error is a configuration problem, naming the file and every offending key.
type Error struct {
	File       string
	Violations schema.Violations
	Err        error
}

func (e *Error) Error() string {
	where := e.File
	if where == "" {
		where = "config"
	}
	if len(e.Violations) > 0 {
		return where + ": " + e.Violations.Error()
	}
	return where + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Load reads, checks and validates a config file. An empty path means DefaultFile if it
// exists in the current directory, else the defaults.
func Load(path string) (*Config, error) {
	if path == "" {
		if _, err := os.Stat(DefaultFile); err != nil {
			cfg := Default()
			wd, err := os.Getwd()
			if err != nil {
				return nil, fmt.Errorf("config: %w", err)
			}
			cfg.Dir = wd
			return &cfg, cfg.Validate()
		}
		path = DefaultFile
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &Error{File: path, Err: err}
	}
	cfg, err := Parse(data, filepath.Dir(abs))
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			ce.File = path
		}
		return nil, err
	}
	cfg.File = abs
	return cfg, nil
}

// Parse checks and decodes TOML text; dir is the directory relative paths are taken from.
func Parse(data []byte, dir string) (*Config, error) {
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return nil, &Error{Err: fmt.Errorf("not valid TOML: %w", err)}
	}
	if vs := checkSchema(raw); len(vs) > 0 {
		return nil, &Error{Violations: vs}
	}
	cfg := Default()
	md, err := toml.Decode(string(data), &cfg)
	if err != nil {
		return nil, &Error{Err: err}
	}
	sections, vs, err := decodeSections(string(data), raw)
	if err != nil {
		return nil, &Error{Err: err}
	}
	cfg.Environment.sections = sections
	for _, k := range md.Undecoded() {
		if len(k) >= 2 && k[0] == "environment" {
			if _, ok := backend.Lookup(k[1]); ok {
				continue // decodeSections' part
			}
		}
		vs = append(vs, schema.Violation{Path: k.String(), Message: "unknown key"})
	}
	if len(vs) > 0 {
		return nil, &Error{Violations: vs}
	}
	cfg.Dir = dir
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// Schema returns the compiled configuration schema.
func Schema() (*schema.Schema, error) {
	entries, err := schemaFiles.ReadDir(".")
	if err != nil {
		return nil, err
	}
	var res []schema.Resource
	for _, e := range entries {
		data, err := schemaFiles.ReadFile(e.Name())
		if err != nil {
			return nil, err
		}
		if e.Name() == "airlock.schema.json" {
			if data, err = withBackends(data); err != nil {
				return nil, err
			}
		}
		res = append(res, schema.Resource{URL: "https://airlock.dev/schema/" + e.Name(), Data: data})
	}
	for _, r := range backend.Records() {
		res = append(res, schema.Resource{URL: "https://airlock.dev/schema/" + r.Kind + ".schema.json", Data: r.Schema})
	}
	return schema.Compile("https://airlock.dev/schema/airlock.schema.json", res...)
}

// withBackends adds to the top-level schema what the registered backends declare:
// environment.type is one of their kinds, and [environment.KIND] follows the kind's own
// schema.
func withBackends(data []byte) ([]byte, error) {
	var top map[string]any
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("airlock.schema.json: %w", err)
	}
	env, _ := top["properties"].(map[string]any)["environment"].(map[string]any)
	props, _ := env["properties"].(map[string]any)
	if props == nil {
		return nil, errors.New("airlock.schema.json: no environment properties")
	}
	kinds := backend.Kinds()
	enum := make([]any, len(kinds))
	for i, k := range kinds {
		enum[i] = k
		props[k] = map[string]any{"$ref": k + ".schema.json"}
	}
	typ, _ := props["type"].(map[string]any)
	if typ == nil {
		return nil, errors.New("airlock.schema.json: no environment.type")
	}
	typ["enum"] = enum
	return json.Marshal(top)
}

func checkSchema(raw map[string]any) schema.Violations {
	s, err := Schema()
	if err != nil {
		return schema.Violations{{Path: "schema", Message: err.Error()}}
	}
	// TOML values become what encoding/json would produce, which is what the validator
	// expects (datetimes turn into strings and so fail any non-string key).
	data, err := json.Marshal(raw)
	if err != nil {
		return schema.Violations{{Path: "", Message: err.Error()}}
	}
	return s.ValidateJSON("", data)
}

// Validate checks what the schema cannot.
func (c *Config) Validate() error {
	var vs schema.Violations
	if c.Environment.Timeout.D() <= 0 {
		vs = append(vs, schema.Violation{Path: "environment.timeout", Message: "must be greater than 0"})
	}
	for _, p := range c.Environment.EnvPassthrough {
		if backend.MatchesEverything(p) {
			vs = append(vs, schema.Violation{Path: "environment.env_passthrough",
				Message: fmt.Sprintf("%q matches every variable name; list the names (or narrow globs such as \"LC_*\") that commands need", p)})
		}
		if backend.IsSecretName(strings.TrimRight(p, "*?")) && !strings.ContainsAny(p, "*?[") {
			vs = append(vs, schema.Violation{Path: "environment.env_passthrough",
				Message: fmt.Sprintf("%q looks like a secret and would never be passed; remove it", p)})
		}
	}
	if r, ok := backend.Lookup(c.Environment.Type); !ok {
		vs = append(vs, schema.Violation{Path: "environment.type",
			Message: fmt.Sprintf("%q is not a backend of this build (have %s)", c.Environment.Type, strings.Join(backend.Kinds(), ", "))})
	} else if r.Validate != nil {
		if err := r.Validate(c.Environment.Section(r.Kind)); err != nil {
			vs = append(vs, schema.Violation{Path: "environment." + r.Kind, Message: err.Error()})
		}
	}
	if err := c.Policy.Validate(); err != nil {
		vs = append(vs, schema.Violation{Path: "policy", Message: err.Error()})
	}
	if err := c.Approvals.Validate(); err != nil {
		vs = append(vs, schema.Violation{Path: "approvals", Message: err.Error()})
	}
	if err := c.Network.Validate(); err != nil {
		vs = append(vs, schema.Violation{Path: "network", Message: err.Error()})
	}
	vs = append(vs, c.networkConflicts()...)
	vs = append(vs, sectionViolations("metrics", c.Metrics.Validate())...)
	vs = append(vs, sectionViolations("telemetry", c.Telemetry.Validate())...)
	vs = append(vs, c.validateAgentFacing()...)
	vs = append(vs, c.Serve.validate()...)
	if len(vs) > 0 {
		return &Error{File: c.File, Violations: vs}
	}
	return nil
}

// Abs resolves a path from the config against Dir.
func (c *Config) Abs(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	if strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[2:])
		}
	}
	return filepath.Join(c.Dir, p)
}

// WorkspaceDir is the local workspace's absolute path.
func (c *Config) WorkspaceDir() string { return c.Abs(c.Environment.Workspace) }

// LedgerPath is the ledger's absolute path: ledger.path, or receipts.jsonl in StateDir.
func (c *Config) LedgerPath() string {
	if c.Ledger.Path == "" {
		return filepath.Join(c.StateDir(), "receipts.jsonl")
	}
	return c.Abs(c.Ledger.Path)
}

// SessionsDir is where named sessions keep their state: beside the ledger.
func (c *Config) SessionsDir() string { return filepath.Join(filepath.Dir(c.LedgerPath()), "sessions") }

// OwnFiles are Airlock's own files, the one list every wall keeps the agent out of: the
// configuration in use, the ledger, the sessions' state, the approvals store (beside the
// ledger wherever it is configured) and the state directory. The path policy refuses them
// to the file tools, the classifier judges a command that names them, the kernel sandbox
// never grants them and doctor warns when one lies in the workspace. What the agent could
// change there, it could use to approve its own calls or rewrite their record.
func (c *Config) OwnFiles() []string {
	own := []string{c.LedgerPath(), c.SessionsDir(), c.ApprovalsDir(), c.StateDir()}
	if c.File != "" {
		own = append(own, c.File)
	}
	return own
}

// StateDir is the workspace's directory in the user's state directory:
// $XDG_STATE_HOME/airlock/<key>, or ~/.local/state/airlock/<key>, where key is the
// workspace's base name and a hash of its resolved path. It lies outside the workspace, so a
// clean-up of the workspace cannot reach it, and the sandbox never grants it.
func (c *Config) StateDir() string {
	return StateDirFor(os.Getenv("XDG_STATE_HOME"), c.WorkspaceDir())
}

// StateDirFor is StateDir for a given $XDG_STATE_HOME (empty: ~/.local/state) and workspace.
func StateDirFor(stateHome, workspace string) string {
	if stateHome == "" || !filepath.IsAbs(stateHome) {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		stateHome = filepath.Join(home, ".local", "state")
	}
	ws := filepath.Clean(workspace)
	if r, err := filepath.EvalSymlinks(ws); err == nil {
		ws = r
	}
	sum := sha256.Sum256([]byte(ws))
	return filepath.Join(stateHome, "airlock", filepath.Base(ws)+"-"+hex.EncodeToString(sum[:6]))
}

// sectionViolations is a section's own Validate error as violations: a [schema.FieldError]
// at its key, anything else at the section.
func sectionViolations(section string, err error) []schema.Violation {
	if err == nil {
		return nil
	}
	if fe := (*schema.FieldError)(nil); errors.As(err, &fe) {
		return []schema.Violation{{Path: fe.Section + "." + fe.Field, Message: fe.Message}}
	}
	return []schema.Violation{{Path: section, Message: err.Error()}}
}
