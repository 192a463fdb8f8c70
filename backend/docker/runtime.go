package docker

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/docker/docker/api/types/system"
)

// ociRuntime is the OCI runtime containers run under, as the daemon describes it.
type ociRuntime struct {
	// note is what Describe says (so `airlock doctor` shows the runtime in force).
	note string
	// gVisor is set for runsc: the container then gets gVisor's variant of the seccomp
	// profile (see seccomp.go).
	gVisor bool
}

// runtimeInForce asks the daemon which OCI runtimes it knows and checks the one containers
// will run under (environment.docker.runtime, or the daemon's default) before any container
// is made.
func (e *Env) runtimeInForce(ctx context.Context) (ociRuntime, error) {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	info, err := e.cli.Info(ctx)
	if err != nil {
		return ociRuntime{}, fmt.Errorf("docker: daemon info: %w", err)
	}
	return checkRuntime(info, e.cfg.Runtime)
}

// checkRuntime is the decision of [Env.runtimeInForce], over the daemon's answer. A
// configured runtime the daemon does not know is refused naming the field, rather than at
// container create with Docker's words. gVisor (runsc) is refused unless the daemon passes it
// --oci-seccomp: without that flag runsc ignores the seccomp profile in the container's spec,
// and the backend's hardening counts on Docker's profile holding.
func checkRuntime(info system.Info, configured string) (ociRuntime, error) {
	name := configured
	if name == "" {
		name = info.DefaultRuntime
	}
	rt, ok := info.Runtimes[name]
	if !ok {
		if configured == "" {
			return ociRuntime{note: fmt.Sprintf("runtime: %s (the daemon's default)", name)}, nil
		}
		known := make([]string, 0, len(info.Runtimes))
		for k := range info.Runtimes {
			known = append(known, k)
		}
		sort.Strings(known)
		return ociRuntime{}, fmt.Errorf("docker: environment.docker.runtime = %q: the daemon does not know this runtime (it knows %s); register it with dockerd --add-runtime or the \"runtimes\" of daemon.json",
			configured, strings.Join(known, ", "))
	}
	where := "the daemon's default"
	if configured != "" {
		where = "environment.docker.runtime"
	}
	if !isGVisor(name, rt.Runtime) {
		return ociRuntime{note: fmt.Sprintf("runtime: %s (%s)", name, where)}, nil
	}
	if rt.Type != "" && rt.Path == "" {
		return ociRuntime{}, fmt.Errorf("docker: runtime %q (%s) is gVisor as a containerd shim (%s), whose flags the daemon does not show, so --oci-seccomp cannot be checked: register runsc by path with \"runtimeArgs\": [\"--oci-seccomp\"]",
			name, where, rt.Type)
	}
	if !slices.Contains(rt.Args, "--oci-seccomp") && !slices.Contains(rt.Args, "--oci-seccomp=true") {
		return ociRuntime{}, fmt.Errorf("docker: runtime %q (%s) is gVisor without --oci-seccomp, so it would ignore the container's seccomp profile: register it with \"runtimeArgs\": [\"--oci-seccomp\"] (daemon.json) or --add-runtime and a daemon.json that sets them",
			name, where)
	}
	return ociRuntime{gVisor: true, note: fmt.Sprintf("runtime: %s (%s): gVisor, a user-space kernel between the container and the host's, with --oci-seccomp so the seccomp profile holds inside it too; ptrace is refused there, since gVisor does not check a call again after a tracer changed it", name, where)}, nil
}

// isGVisor tells gVisor by its binary (runsc) or its containerd shim type.
func isGVisor(name string, rt system.Runtime) bool {
	return name == "runsc" || filepath.Base(rt.Path) == "runsc" || strings.Contains(rt.Type, "runsc")
}
