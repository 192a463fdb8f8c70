package engine

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/backend/local"
	"github.com/airlock-dev/airlock/backend/sandbox"
	"github.com/airlock-dev/airlock/configs"
	"github.com/airlock-dev/airlock/pathpolicy"
)

// localOptions are the local backend's sandbox options for cfg.
func localOptions() []local.Option {
	if p := testProbe(); p != nil {
		return []local.Option{local.WithSandboxProbe(p)}
	}
	return nil
}

// localSandbox turns the config into the local backend's sandbox: the policy's roots as host
// paths, Airlock's own files protected, deny_names hidden.
func localSandbox(cfg *configs.Config, sec *local.Section) local.SandboxConfig {
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
	protected := []string{cfg.LedgerPath(), cfg.SessionsDir(), cfg.StateDir()}
	if cfg.File != "" {
		protected = append(protected, cfg.File)
	}
	return local.SandboxConfig{
		Mode:       sandbox.Mode(sec.Sandbox),
		ReadRoots:  append(roots(read), roots(write)...),
		WriteRoots: roots(write),
		Protected:  protected,
		Hidden:     func(rel string) bool { return pathpolicy.MatchName(hidden, rel) },
	}
}

// testProbe lets a test play a kernel with another Landlock ABI (AIRLOCK_TEST_LANDLOCK_ABI=0:
// none). It can only make the sandbox weaker than the kernel allows, which in mode auto makes
// the approval gate stricter, and in mode landlock makes Airlock refuse to start; the
// result's notes say so either way.
func testProbe() sandbox.Probe {
	v, ok := os.LookupEnv("AIRLOCK_TEST_LANDLOCK_ABI")
	if !ok {
		return nil
	}
	abi, err := strconv.Atoi(v)
	if err != nil {
		abi = 0
	}
	return func() int { return min(abi, sandbox.KernelABI()) }
}
