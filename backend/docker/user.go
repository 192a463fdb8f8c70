package docker

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"github.com/airlock-dev/airlock/backend"
)

// UserAuto, the default user, runs commands as the owner of the mounted workspace — the
// writable volume at or above workdir — so that what they write there belongs to the person
// whose files they are, as devcontainers do. Without such a volume, or when root owns it, it
// is nobody: commands never run as root unless the configuration says so (root in the
// container could replace the resident helper).
const UserAuto = "auto"

// nobody is the user commands run as when no one else fits.
const nobody = "65534:65534"

// resolveUser returns the uid:gid commands run as, and a note for Describe saying why when
// the user was chosen for the configuration rather than written in it.
func resolveUser(cfg Config) (user, note string) {
	if cfg.User != UserAuto {
		return cfg.User, ""
	}
	v, ok := workspaceVolume(cfg)
	if !ok {
		return nobody, "commands run as " + nobody + " (nobody): no writable volume is mounted at the workdir " + cfg.Workdir
	}
	real, err := filepath.EvalSymlinks(v.Host)
	if err != nil {
		return nobody, "" // buildSpec reports the volume itself
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nobody, ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nobody, ""
	}
	if st.Uid == 0 {
		return nobody, fmt.Sprintf("commands run as %s (nobody): the workspace %s is owned by root, and commands never run as root unless environment.docker.user says so; they can write in it only where its modes let nobody — chown it to the user whose files these are, or set environment.docker.user", nobody, real)
	}
	user = fmt.Sprintf("%d:%d", st.Uid, st.Gid)
	return user, "commands run as " + user + ", the owner of the workspace " + real + " (environment.docker.user = \"auto\")"
}

// workspaceVolume is the writable volume mounted at the workdir or above it, the deepest
// one when several are.
func workspaceVolume(cfg Config) (Volume, bool) {
	var best Volume
	found := false
	for _, v := range cfg.Volumes {
		if v.ReadOnly || !backend.Within(path.Clean(v.Container), path.Clean(cfg.Workdir)) {
			continue
		}
		if !found || len(path.Clean(v.Container)) > len(path.Clean(best.Container)) {
			best, found = v, true
		}
	}
	return best, found
}
