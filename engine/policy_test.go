package engine_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/configs"
)

// policySection is the section of a backend only this test knows.
type policySection struct {
	Network string `toml:"network"`
}

// policyOption is what the fake record's Derive hands its Open.
type policyOption struct{ network string }

// derived records what the fake backend's record was handed, per session.
var derived = struct {
	sync.Mutex
	policies map[string]backend.Policy
	opened   map[string]policyOption
}{policies: map[string]backend.Policy{}, opened: map[string]policyOption{}}

func init() {
	backend.Register(backend.Record{
		Kind:       "fake-policy",
		Schema:     []byte(`{"type": "object", "additionalProperties": false, "properties": {"network": {"type": "string"}}}`),
		NewConfig:  func() any { return &policySection{Network: "none"} },
		PerSession: true,
		Derive: func(section any, p backend.Policy) ([]any, error) {
			derived.Lock()
			defer derived.Unlock()
			derived.policies[p.Session] = p
			sec := section.(*policySection)
			sec.Network = string(p.Network.Mode) // the session's own copy
			return []any{policyOption{network: sec.Network}}, nil
		},
		Open: func(ctx context.Context, s backend.Settings) (backend.Environment, error) {
			for _, o := range s.Options {
				if o, ok := o.(policyOption); ok {
					derived.Lock()
					derived.opened[s.Session] = o
					derived.Unlock()
					if s.Section.(*policySection).Network != o.network {
						panic("Open did not get the section Derive adapted")
					}
				}
			}
			// The commands run on a local environment: this backend only tests the hook.
			local, _ := backend.Lookup("local")
			return local.Open(ctx, backend.Settings{Workspace: s.Workspace, DefaultTimeout: s.DefaultTimeout,
				MaxOutputBytes: s.MaxOutputBytes, KillGrace: s.KillGrace, Session: s.Session, Logger: s.Logger,
				Section: local.NewConfig()})
		},
	})
}

// TestBackendRecordDerivesFromPolicy shows that a backend the runtime has never heard of
// receives the path policy and [network] through its record's Derive, and that what it
// derives reaches its Open.
func TestBackendRecordDerivesFromPolicy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := configs.Parse([]byte(`[environment]
type = "fake-policy"
workspace = "ws"
[ledger]
path = "state/receipts.jsonl"
[policy]
read_roots = ["docs"]
write_roots = ["src"]
deny_names = [".env", ".git/config"]
[network]
mode = "allowlist"
allow_domains = ["example.com"]
`), dir)
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, cfg)
	openSession(t, e, "policy-a")

	derived.Lock()
	p, ok := derived.policies["policy-a"]
	opened := derived.opened["policy-a"]
	derived.Unlock()
	if !ok {
		t.Fatal("the record's Derive was not called for the session")
	}
	if opened.network != "allowlist" {
		t.Errorf("Open got option %+v, want what Derive returned", opened)
	}
	wsDir := cfg.WorkspaceDir()
	if !slices.Equal(p.Paths.WriteRoots, []string{filepath.Join(wsDir, "src")}) {
		t.Errorf("write roots %q", p.Paths.WriteRoots)
	}
	if !slices.Contains(p.Paths.ReadRoots, filepath.Join(wsDir, "docs")) || !slices.Contains(p.Paths.ReadRoots, filepath.Join(wsDir, "src")) {
		t.Errorf("read roots %q: want docs and the write root src", p.Paths.ReadRoots)
	}
	if !slices.Contains(p.Paths.Protected, cfg.LedgerPath()) {
		t.Errorf("protected %q: want the ledger %s", p.Paths.Protected, cfg.LedgerPath())
	}
	if p.Paths.Hidden == nil || !p.Paths.Hidden("a/.env") || p.Paths.Hidden(".git/config") || p.Paths.Hidden("main.go") {
		t.Error("hidden: want .env hidden from commands, .git/config (file tools only) and main.go not")
	}
	if p.Session != "policy-a" || p.Logger == nil {
		t.Errorf("session %q, logger %v", p.Session, p.Logger)
	}
	if p.Network.Mode != backend.NetworkAllowlist || p.Network.Proxy == nil {
		t.Fatalf("network %+v: want allowlist with an egress proxy", p.Network)
	}
	// The proxy it is handed is the runtime's: it starts on the address the backend gives.
	eg, err := p.Network.Proxy(context.Background(), netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eg.Stop() })
	if !strings.HasPrefix(eg.URL, "http://127.0.0.1:") {
		t.Errorf("proxy URL %q", eg.URL)
	}
}
