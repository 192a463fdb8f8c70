package sandbox

import (
	"path/filepath"
	"strings"
)

// ScratchEnv points a command's temporary and cache directories into the session's private
// temp dir: TMPDIR always; with enforced, also the build and package caches that live in the
// home directory, which the sandbox grants read-only (a writable shared cache would let a
// command plant entries the user's own builds later trust). Tools then work, with a cold
// cache per session.
func ScratchEnv(env []string, tmp string, enforced bool) []string {
	set := map[string]string{"TMPDIR": tmp}
	if enforced {
		set["GOCACHE"] = filepath.Join(tmp, "go-build")
		set["XDG_CACHE_HOME"] = filepath.Join(tmp, "cache")
		set["npm_config_cache"] = filepath.Join(tmp, "npm")
		set["PIP_CACHE_DIR"] = filepath.Join(tmp, "pip")
	}
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := set[name]; !ok {
			out = append(out, kv)
		}
	}
	for _, name := range []string{"TMPDIR", "GOCACHE", "XDG_CACHE_HOME", "npm_config_cache", "PIP_CACHE_DIR"} {
		if v, ok := set[name]; ok {
			out = append(out, name+"="+v)
		}
	}
	return out
}
