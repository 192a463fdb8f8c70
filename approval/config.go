package approval

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/airlock-dev/airlock/shellrisk"
)

// Modes of the gate.
const (
	ModeAuto   = "auto"   // run everything except the hard-deny list
	ModeManual = "manual" // safe (and, with allow_write, write) runs; the rest asks a person
	ModeSmart  = "smart"  // what manual would ask about goes to a guard model first
)

// Config is the `[approvals]` table.
type Config struct {
	// Mode is auto, manual or smart.
	Mode string `toml:"mode" json:"mode"`
	// AllowWrite lets write commands run without asking in manual and smart modes.
	AllowWrite bool `toml:"allow_write" json:"allow_write"`
	// AllowIrreversible lets commands that lose work nothing brings back (git reset --hard,
	// git clean -fdx, git push --force) run without asking as well, where AllowWrite does.
	// Off by default: such a command asks a person even with AllowWrite.
	AllowIrreversible bool `toml:"allow_irreversible" json:"allow_irreversible"`
	// AskToRunCode asks a person before a command runs the project's code (go test, make,
	// npm test, ./script.sh: runs_code, runs_script, interpreter_code) even where commands
	// are confined — a container or the kernel sandbox, with the network not open — and
	// AllowWrite is on. Off by default: there the sandbox bounds what such code can do as it
	// bounds a write, and asking a person for every build teaches them to approve without
	// reading. Where nothing confines commands such code always asks.
	AskToRunCode bool `toml:"ask_to_run_code" json:"ask_to_run_code"`
	// Smart configures the guard model used in smart mode.
	Smart SmartConfig `toml:"smart" json:"smart"`
	// Rules extends the embedded rules.toml, in the same format.
	Rules shellrisk.RulesConfig `toml:"rules" json:"rules"`
	// DockerAutoApprove approves every command that is not hard-denied when the backend is
	// isolated: a container with no writable host mount and no network.
	DockerAutoApprove bool `toml:"docker_auto_approve" json:"docker_auto_approve"`
	// SessionCache remembers, for the rest of a session, approvals of an exact command
	// given by the guard or by a person who answered "session".
	SessionCache bool `toml:"session_cache" json:"session_cache"`
}

// SmartConfig is the `[approvals.smart]` table: an OpenAI-compatible chat completions
// endpoint that answers APPROVE, DENY or ESCALATE.
type SmartConfig struct {
	BaseURL string `toml:"base_url" json:"base_url"`
	Model   string `toml:"model" json:"model"`
	// APIKeyEnv names the environment variable holding the API key; the key itself never
	// sits in a config file.
	APIKeyEnv string `toml:"api_key_env" json:"api_key_env"`
	// Timeout bounds one guard request, as a Go duration ("10s").
	Timeout string `toml:"timeout" json:"timeout"`
	// MaxCommandBytes is the longest command sent to the guard; longer ones go to a person.
	MaxCommandBytes int `toml:"max_command_bytes" json:"max_command_bytes"`
	// MaxConsecutiveDenials opens the circuit breaker: after this many guard denials in a
	// row the guard is not asked again and commands go to a person.
	MaxConsecutiveDenials int `toml:"max_consecutive_denials" json:"max_consecutive_denials"`
}

// DefaultConfig returns the defaults: manual mode, nothing written without asking, docker
// isolation trusted, the project's code run unasked where writes are and commands are
// confined, approvals cached per session.
func DefaultConfig() Config {
	return Config{
		Mode:              ModeManual,
		DockerAutoApprove: true,
		AskToRunCode:      false,
		SessionCache:      true,
		Smart: SmartConfig{
			Timeout:               "15s",
			MaxCommandBytes:       8 << 10,
			MaxConsecutiveDenials: 3,
		},
	}
}

// Validate checks what a schema cannot. Errors name the field.
func (c Config) Validate() error {
	var errs []error
	switch c.Mode {
	case ModeAuto, ModeManual, ModeSmart:
	default:
		errs = append(errs, fmt.Errorf("approvals.mode: must be one of auto, manual, smart, got %q", c.Mode))
	}
	if c.Mode == ModeSmart {
		errs = append(errs, c.Smart.validate()...)
	}
	// Only rules the config adds need checking: the embedded ones are checked by shellrisk's
	// tests, and building the classifier here put ~4 ms on every process's start (the engine
	// builds it beside the environment's start instead).
	if !c.Rules.IsZero() {
		if _, err := shellrisk.NewClassifier(c.Rules); err != nil {
			errs = append(errs, fmt.Errorf("approvals.rules: %w", err))
		}
	}
	return errors.Join(errs...)
}

func (s SmartConfig) validate() []error {
	var errs []error
	if s.BaseURL == "" {
		errs = append(errs, errors.New("approvals.smart.base_url: required in smart mode"))
	} else if u, err := url.Parse(s.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("approvals.smart.base_url: must be an http or https URL, got %q", s.BaseURL))
	}
	if s.Model == "" {
		errs = append(errs, errors.New("approvals.smart.model: required in smart mode"))
	}
	if d, err := time.ParseDuration(s.Timeout); err != nil || d <= 0 {
		errs = append(errs, fmt.Errorf("approvals.smart.timeout: must be a positive duration, got %q", s.Timeout))
	}
	if s.MaxCommandBytes <= 0 {
		errs = append(errs, fmt.Errorf("approvals.smart.max_command_bytes: must be positive, got %d", s.MaxCommandBytes))
	}
	if s.MaxConsecutiveDenials <= 0 {
		errs = append(errs, fmt.Errorf("approvals.smart.max_consecutive_denials: must be positive, got %d", s.MaxConsecutiveDenials))
	}
	return errs
}

func (s SmartConfig) timeout() time.Duration {
	d, err := time.ParseDuration(s.Timeout)
	if err != nil || d <= 0 {
		return 15 * time.Second
	}
	return d
}
