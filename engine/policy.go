package engine

import (
	"path/filepath"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/metrics"
	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/urlguard"
)

// backendPolicy is what the runtime hands a backend's record (see [backend.Record.Derive])
// from the config's other sections: the path policy as host paths, Airlock's own files,
// [network] with the egress proxy to start in mode allowlist. The record decides what its
// backend makes of it; the runtime never names a backend.
func backendPolicy(cfg *configs.Config, session string, log hclog.Logger, m *metrics.Metrics) backend.Policy {
	return backend.Policy{
		Paths:   pathsPolicy(cfg),
		Network: networkPolicy(cfg, session, log, m),
		Session: session,
		Logger:  log,
	}
}

// pathsPolicy turns the path policy into host paths: roots against the workspace,
// Airlock's own files protected, the deny_names commands must not see.
func pathsPolicy(cfg *configs.Config) backend.PathPolicy {
	ws := cfg.WorkspaceDir()
	roots := func(rs []string) []string {
		var out []string
		for _, r := range rs {
			if !filepath.IsAbs(r) {
				r = filepath.Join(ws, r)
			}
			out = append(out, r)
		}
		return out
	}
	pol := cfg.Policy
	read, write := pol.ReadRoots, pol.WriteRoots
	if len(read) == 0 {
		read = []string{"."}
	}
	if len(write) == 0 {
		write = []string{"."}
	}
	deny := pol.DenyNames
	if deny == nil {
		deny = pathpolicy.DefaultDenyNames
	}
	// git reads its own config and hooks directory: those deny_names bind the file tools,
	// and the git overrides every command carries keep git from running what they name.
	var hidden []string
	for _, d := range deny {
		if !strings.HasPrefix(strings.ToLower(strings.TrimPrefix(d, "/")), ".git/") {
			hidden = append(hidden, d)
		}
	}
	return backend.PathPolicy{
		ReadRoots:            append(roots(read), roots(write)...),
		WriteRoots:           roots(write),
		ConfiguredReadRoots:  read,
		ConfiguredWriteRoots: write,
		Protected:            cfg.OwnFiles(),
		Hidden:               func(rel string) bool { return pathpolicy.MatchName(hidden, rel) },
	}
}

// networkPolicy is [network] mode, with the egress proxy of the session in mode allowlist.
func networkPolicy(cfg *configs.Config, session string, log hclog.Logger, m *metrics.Metrics) backend.NetworkPolicy {
	switch cfg.Network.Mode {
	case urlguard.ModeOpen:
		return backend.NetworkPolicy{Mode: backend.NetworkOpen}
	case urlguard.ModeAllowlist:
		return backend.NetworkPolicy{Mode: backend.NetworkAllowlist, Proxy: egressProxy(cfg, session, log, m)}
	}
	return backend.NetworkPolicy{Mode: backend.NetworkNone}
}
