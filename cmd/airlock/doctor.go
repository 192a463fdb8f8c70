package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/backend/sandbox"
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/engine"
	"github.com/airlock-dev/airlock/metrics"
	"github.com/airlock-dev/airlock/urlguard"
)

// doctor opens the configured environment and says what is and is not enforced there: the
// kernel sandbox, isolation, where Airlock's own state lives and whether commands can reach
// it. It is what a person runs before trusting a setup.
func init() {
	register(command{name: "doctor", summary: "say what the configured environment enforces and what it does not", run: runDoctor})
}

type doctorReport struct {
	Config       string               `json:"config"`
	Backend      string               `json:"backend"`
	Mode         string               `json:"mode,omitempty"`
	Target       string               `json:"target"`
	Enforced     bool                 `json:"enforced"`
	Capabilities backend.Capabilities `json:"capabilities"`
	LandlockABI  int                  `json:"host_landlock_abi"`
	NonDumpable  bool                 `json:"airlock_non_dumpable"`
	Ledger       string               `json:"ledger"`
	StateDir     string               `json:"state_dir"`
	Network      string               `json:"network"`
	Metrics      string               `json:"metrics"`
	Notes        []string             `json:"notes"`
	Warnings     []string             `json:"warnings,omitempty"`
}

// networkReport says what [network] mode means where commands run.
func networkReport(cfg *configs.Config, d backend.Description) (string, string) {
	mode := cfg.Network.Mode
	switch {
	case d.Kind == "ssh" && mode == urlguard.ModeAllowlist:
		return fmt.Sprintf("mode allowlist: HTTP(S)_PROXY sends commands' web traffic through Airlock's egress proxy (allows %v) over a port reverse-forwarded to the remote host; the remote host's own network is not cut", cfg.Network.AllowDomains),
			"[network] mode = \"allowlist\" on SSH governs only what goes through the proxy: a command that ignores HTTP(S)_PROXY reaches what the remote host reaches (unless the helper's kernel sandbox forbids its TCP)"
	case d.Kind == "ssh" && mode != urlguard.ModeOpen:
		return fmt.Sprintf("mode %s: not enforced on the remote host (its network is not Airlock's to cut)", mode),
			"[network] mode = \"" + string(mode) + "\" does not cut the SSH host's network: commands there reach what the host reaches"
	case mode == urlguard.ModeNone:
		return "mode none: commands have no network", ""
	case mode == urlguard.ModeAllowlist:
		return fmt.Sprintf("mode allowlist: commands reach only %v, through Airlock's egress proxy (HTTP(S)_PROXY)", cfg.Network.AllowDomains), ""
	}
	return "mode open: commands reach any address; web_fetch still refuses internal and metadata addresses", ""
}

func runDoctor(args []string, s stdio) int {
	fs := newFlagSet("doctor", "doctor [--config FILE] [--json]", s)
	configFile := fs.String("config", "", "config file (default: airlock.toml if present, else defaults)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	cfg, err := configs.Load(*configFile)
	if err != nil {
		return fail(s, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	env, err := engine.OpenEnvironment(ctx, cfg, "", hclog.NewNullLogger())
	if err != nil {
		return fail(s, fmt.Errorf("environment: %w", err))
	}
	defer env.Close(context.WithoutCancel(ctx))
	// A backend that connects lazily says what it enforces once it ran something.
	_, _ = env.Exec(ctx, backend.Request{Argv: []string{"true"}})
	d := env.Describe()
	r := doctorReport{
		Config: cfg.File, Backend: d.Kind, Mode: d.Mode, Target: d.Target,
		Enforced: d.Capabilities.Enforced(), Capabilities: d.Capabilities,
		LandlockABI: sandbox.KernelABI(), NonDumpable: dumpableErr == nil,
		Ledger: cfg.LedgerPath(), StateDir: cfg.StateDir(), Notes: d.Notes,
	}
	if r.Config == "" {
		r.Config = "(built-in defaults)"
	}
	var netWarn string
	r.Network, netWarn = networkReport(cfg, d)
	if netWarn != "" {
		r.Warnings = append(r.Warnings, netWarn)
	}
	r.Metrics = "off ([metrics] listen not set)"
	if m := cfg.Metrics; m.Listen != "" {
		path := m.Path
		if path == "" {
			path = metrics.DefaultPath
		}
		r.Metrics = "served by airlock mcp at http://" + m.Listen + path
	}
	if !r.Enforced {
		r.Warnings = append(r.Warnings, "nothing but the classifier's reading of the command text holds shell commands to the roots: only commands judged safe run without a person")
	}
	ws := cfg.WorkspaceDir()
	for _, p := range cfg.OwnFiles() {
		// In namespaces a mask covers the file alone; without, Landlock leaves its directory out.
		if p != "" && d.Kind == "local" && d.Mode != "helper-namespaces" && within(ws, p) {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s lies in the workspace: the sandbox keeps it out, but nothing new can be created directly in %s; move it out of the workspace", p, filepath.Dir(p)))
		}
	}
	if *asJSON {
		out, _ := json.MarshalIndent(r, "", "  ")
		fmt.Fprintln(s.out, string(out))
		return 0
	}
	w := s.out
	fmt.Fprintf(w, "config:       %s\n", r.Config)
	fmt.Fprintf(w, "backend:      %s %s (%s)\n", r.Backend, r.Mode, r.Target)
	state := "not enforced"
	if r.Enforced {
		state = "enforced"
	}
	fmt.Fprintf(w, "policy:       %s where commands run (container isolation: %v, kernel sandbox: %v, network isolation: %v)\n",
		state, d.Capabilities.FilesystemIsolation, d.Capabilities.KernelSandbox, d.Capabilities.NetworkIsolation)
	fmt.Fprintf(w, "network:      %s\n", r.Network)
	fmt.Fprintf(w, "metrics:      %s\n", r.Metrics)
	fmt.Fprintf(w, "this host:    Landlock ABI %d (sandbox needs %d); airlock non-dumpable: %v\n", r.LandlockABI, sandbox.RequiredABI, r.NonDumpable)
	fmt.Fprintf(w, "ledger:       %s\nstate dir:    %s\n", r.Ledger, r.StateDir)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  - %s\n", n)
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	return 0
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
