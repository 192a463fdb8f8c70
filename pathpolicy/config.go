package pathpolicy

import (
	"fmt"
	"path"
	"strings"
)

// Config is the [policy] section of the configuration.
type Config struct {
	// ReadRoots and WriteRoots are the directories calls may read and write, relative to the
	// workspace or absolute, as the environment sees them. Empty means the workspace.
	ReadRoots  []string `toml:"read_roots"`
	WriteRoots []string `toml:"write_roots"`
	// MaxReadBytes bounds what a file tool reads of one file.
	MaxReadBytes int64 `toml:"max_read_bytes"`
	// MaxWriteBytes bounds the UTF-8 bytes one call may write.
	MaxWriteBytes int64 `toml:"max_write_bytes"`
	// DenyNames are names no call may touch, at any depth: a pattern without a slash is a
	// glob on one path component (".env", "*.pem"); one with slashes matches consecutive
	// components (".git/hooks", ".git/config") and everything below them. Matching ignores
	// case. The default, [DefaultDenyNames], keeps secrets and the places git runs code from
	// out of reach.
	DenyNames []string `toml:"deny_names"`
	// AllowedTools, when not empty, is the only tools calls may use.
	AllowedTools []string `toml:"allowed_tools"`
	// DenialBudget is how many denials a session may collect before the pipeline stops it.
	// The policy only carries the number.
	DenialBudget int `toml:"denial_budget"`
}

// Default limits.
const (
	DefaultMaxReadBytes  = 5_000_000
	DefaultMaxWriteBytes = 2_000_000
	DefaultDenialBudget  = 20
)

// DefaultDenyNames are the names denied when a configuration names none: secrets (.env,
// keys), and what makes git run code: hooks, and the config (core.fsmonitor, core.pager,
// aliases are commands run by the next git status or log), for the repository and for its
// submodules, whose hooks and configs live under .git/modules.
var DefaultDenyNames = []string{".env", ".env.*", ".git/hooks", ".git/config", ".git/modules", ".ssh", "id_rsa*", "*.pem"}

// DefaultConfig returns the policy used when the configuration has no [policy] section: the
// workspace for reading and writing, the default limits and deny names, every tool.
func DefaultConfig() Config {
	return Config{
		ReadRoots:     []string{"."},
		WriteRoots:    []string{"."},
		MaxReadBytes:  DefaultMaxReadBytes,
		MaxWriteBytes: DefaultMaxWriteBytes,
		DenyNames:     append([]string(nil), DefaultDenyNames...),
		DenialBudget:  DefaultDenialBudget,
	}
}

// withDefaults fills unset fields from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if len(c.ReadRoots) == 0 {
		c.ReadRoots = d.ReadRoots
	}
	if len(c.WriteRoots) == 0 {
		c.WriteRoots = d.WriteRoots
	}
	if c.MaxReadBytes == 0 {
		c.MaxReadBytes = d.MaxReadBytes
	}
	if c.MaxWriteBytes == 0 {
		c.MaxWriteBytes = d.MaxWriteBytes
	}
	if c.DenyNames == nil {
		c.DenyNames = d.DenyNames
	}
	if c.DenialBudget == 0 {
		c.DenialBudget = d.DenialBudget
	}
	return c
}

// Validate reports what the schema cannot, naming the key.
func (c Config) Validate() error {
	for _, r := range append(append([]string(nil), c.ReadRoots...), c.WriteRoots...) {
		if r == "" || strings.ContainsRune(r, 0) {
			return fmt.Errorf("policy: read_roots/write_roots: %q is not a usable path", r)
		}
	}
	switch {
	case c.MaxReadBytes < 0:
		return fmt.Errorf("policy: max_read_bytes: must not be negative")
	case c.MaxWriteBytes < 0:
		return fmt.Errorf("policy: max_write_bytes: must not be negative")
	case c.DenialBudget < 0:
		return fmt.Errorf("policy: denial_budget: must not be negative")
	}
	for _, n := range c.DenyNames {
		if err := validPattern(n); err != nil {
			return fmt.Errorf("policy: deny_names: %q: %w", n, err)
		}
	}
	for _, n := range c.AllowedTools {
		if n == "" {
			return fmt.Errorf("policy: allowed_tools: empty tool name")
		}
	}
	return nil
}

func validPattern(p string) error {
	if p == "" || strings.Trim(p, "/") == "" {
		return fmt.Errorf("empty pattern")
	}
	for _, part := range strings.Split(strings.Trim(p, "/"), "/") {
		if _, err := path.Match(part, ""); err != nil {
			return err
		}
	}
	return nil
}
