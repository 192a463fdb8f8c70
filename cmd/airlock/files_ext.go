package main

import (
	"context"
	"path"
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
// the environment sees them, symlinks resolved so that they compare with resolved paths. On
// the local backend they are host paths; in a container, the ones under a mounted host
// directory are protected at their path inside; an SSH host does not see them at all.
func protectedFiles(st *stack) []string {
	ledger := st.cfg.LedgerPath()
	host := []string{ledger, filepath.Join(filepath.Dir(ledger), "sessions")}
	if st.cfg.File != "" {
		host = append(host, st.cfg.File)
	}
	for i, p := range host {
		host[i] = realPath(p)
	}
	if _, ok := st.env.(backend.HostDir); ok {
		return host
	}
	if st.cfg.Environment.Type != "docker" {
		return nil
	}
	var inside []string
	for _, v := range st.cfg.Environment.Docker.Volumes {
		src := realPath(st.cfg.Abs(v.Host))
		for _, p := range host {
			if rel, err := filepath.Rel(src, p); err == nil && backend.Within(src, p) {
				inside = append(inside, path.Join(v.Container, filepath.ToSlash(rel)))
			}
		}
	}
	return inside
}

// realPath resolves symlinks in p, or in its deepest existing parent when p does not exist.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	dir, base := filepath.Split(filepath.Clean(p))
	if dir == "" || dir == p {
		return p
	}
	return filepath.Join(realPath(filepath.Clean(dir)), base)
}
