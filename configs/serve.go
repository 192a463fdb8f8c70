package configs

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/schema"
)

// Serve is the [serve] table: how `airlock serve` listens and whom it lets in.
type Serve struct {
	// Addr is host:port; a host that is not loopback needs `--allow-remote`.
	Addr string `toml:"addr"`
	// Tokens are named bearer tokens besides the generated one.
	Tokens []ServeToken `toml:"tokens"`
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64 `toml:"max_body_bytes"`
	// ShutdownGrace is how long running calls may finish after SIGTERM before they are
	// cancelled.
	ShutdownGrace backend.Duration `toml:"shutdown_grace"`
	// ApprovalWebhook, when its URL is set, is told of each new pending approval.
	ApprovalWebhook ApprovalWebhook `toml:"approval_webhook"`
	// MaxCallsPerToken bounds the calls one token has running at once over the API; one
	// past it gets 429 too_many_calls. It keeps one agent from taking every worker.
	MaxCallsPerToken int `toml:"max_calls_per_token"`
	// MaxSessionTTL is the longest idle TTL a client may give its session (PATCH
	// /v1/sessions/{id}).
	MaxSessionTTL backend.Duration `toml:"max_session_ttl"`
}

// ApprovalWebhook is [serve.approval_webhook]: a URL that gets each new pending approval as
// a signed JSON POST, so that a chat bot can put it to a person (who answers through
// POST /v1/approvals/{id}). The secret is named by an environment variable, never written
// in the config.
type ApprovalWebhook struct {
	URL       string `toml:"url"`
	SecretEnv string `toml:"secret_env"`
}

// ServeToken is one named token. The config holds the SHA-256 of the token, never the
// token: a config is read by more people and programs than a credential should be.
type ServeToken struct {
	Name   string `toml:"name"`
	SHA256 string `toml:"sha256"`
}

// DefaultTokenName is the name of the token `airlock serve` generates on its first start.
const DefaultTokenName = "default"

func defaultServe() Serve {
	return Serve{
		Addr:          "127.0.0.1:8765",
		MaxBodyBytes:  4 << 20,
		ShutdownGrace: backend.Duration(30 * time.Second),
		// Twice the default tool workers of a session, for a few sessions' worth of a
		// token's agents; calls past it are asked to come back rather than queued unseen.
		MaxCallsPerToken: 32,
		MaxSessionTTL:    backend.Duration(24 * time.Hour),
	}
}

func (s *Serve) validate() schema.Violations {
	var vs schema.Violations
	seenName, seenSum := map[string]bool{DefaultTokenName: true}, map[string]bool{}
	for i, t := range s.Tokens {
		path := fmt.Sprintf("serve.tokens[%d]", i)
		if seenName[t.Name] {
			vs = append(vs, schema.Violation{Path: path + ".name", Message: fmt.Sprintf("%q is used twice (%q is the generated token's)", t.Name, DefaultTokenName)})
		}
		if seenSum[t.SHA256] {
			vs = append(vs, schema.Violation{Path: path + ".sha256", Message: "the same token under two names"})
		}
		seenName[t.Name], seenSum[t.SHA256] = true, true
	}
	if w := s.ApprovalWebhook; w.URL != "" && w.SecretEnv == "" {
		vs = append(vs, schema.Violation{Path: "serve.approval_webhook.secret_env", Message: "is required with url: the receiver checks each body's HMAC-SHA256 with that secret"})
	}
	if s.ShutdownGrace.D() <= 0 {
		vs = append(vs, schema.Violation{Path: "serve.shutdown_grace", Message: "must be greater than 0"})
	}
	return vs
}

// ServeTokenPath is where `airlock serve` keeps the token it generated: in the state
// directory, mode 0600.
func (c *Config) ServeTokenPath() string { return filepath.Join(c.StateDir(), "serve-token") }
