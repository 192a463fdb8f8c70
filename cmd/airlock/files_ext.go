package main

import (
	"context"
	"path/filepath"

	"github.com/airlock-dev/airlock/backend"
	"github.com/airlock-dev/airlock/fileops"
	"github.com/airlock-dev/airlock/pathpolicy"
	"github.com/airlock-dev/airlock/pipeline"
	"github.com/airlock-dev/airlock/tool"
)

func init() {
	registerExtension("files", func(_ context.Context, st *stack, reg *tool.Registry, opts *pipeline.Options, _ stdio) error {
		protected := protectedFiles(st)
		pol, err := pathpolicy.New(st.cfg.Policy, pathpolicy.WithProtectedFiles(protected...))
		if err != nil {
			return err
		}
		fo := fileops.OptionsFrom(pol.Config())
		fo.Hide = func(p string) bool {
			for _, q := range protected {
				if backend.Within(q, p) {
					return true
				}
			}
			return pol.Hides(p)
		}
		if err := fileops.Register(reg, fo); err != nil {
			return err
		}
		opts.Policy = pol
		opts.DenialBudget = pol.DenialBudget()
		return nil
	})
}

// protectedFiles are Airlock's own files — the config, the ledger, the session store — as
// the environment sees them. On the local backend they are host paths; remote environments
// do not see the host's files, so nothing needs protecting there.
func protectedFiles(st *stack) []string {
	if _, ok := st.env.(backend.HostDir); !ok {
		return nil
	}
	ledger := st.cfg.LedgerPath()
	out := []string{ledger, filepath.Join(filepath.Dir(ledger), "sessions")}
	if st.cfg.File != "" {
		out = append(out, st.cfg.File)
	}
	return out
}
