// Package docker runs commands in a hardened container through the Docker Engine API.
//
// It is the backend for untrusted, agent-written code. The container is the boundary, so it
// is built to be one by default: every capability dropped (an add-list is configurable;
// with the resident helper the container adds CAP_SETUID and CAP_SETGID, which only the
// helper holds), no-new-privileges, a seccomp profile that refuses setuid and setgid modes
// and device nodes (nosuid,nodev protect only inside the container; see seccomp.go), pids, memory and CPU limits (always: 0 is refused, not read as "none"),
// no network, a non-root user, /tmp as a tmpfs, an init process that reaps zombies, and
// only the exact host directories the configuration names mounted — never /, /etc, a home
// directory's root, a Docker or containerd socket (the configured daemon's included) or a
// directory holding any unix socket at its top level, with symlinks resolved before
// deciding, and never a directory inside another volume that is mounted writable (see
// [Config.Validate]). Docker resolves a bind mount's host path each time a container starts,
// so before every start or restart the host paths are checked again and must still resolve
// to the directories the session began with.
//
// Host variables reach commands only through env_passthrough (LANG, LC_*, TERM and the like
// by default); PATH, HOME and secrets never do.
//
// The configuration is first expressed as an OCI runtime "spec" (mounts, capabilities,
// resources, which helper binary, if any, is used) and translated once to the Engine API's
// types; the spec's SHA-256, with the image ID, is the container's fingerprint. A reused
// container is found by name (prefix + fingerprint) and its fingerprint label is checked, so
// a different configuration, or another helper binary, always gets a container of its own. Containers carry labels naming their owner, session, creating
// process and idle TTL; [GC] (airlock gc) removes those whose session is gone or whose idle
// TTL passed. Idle time is measured from the modification time of /.airlock-last-use inside
// the container, which every command touches, or from the container's start when the root
// filesystem is read-only.
//
// Commands normally go to a resident helper (package helper, the airlock binary itself,
// copied in once) over one attached exec stream, which costs about a millisecond per
// command instead of the ~45 ms of a docker exec. The helper lives in /.airlock, which only
// root can write: a directory of the root filesystem, or a tmpfs of its own when the root
// filesystem is read-only. When commands run as a numeric user other than root (always with
// user "auto"), the helper starts as root and keeps root as its real user while it acts as
// theirs, so that no command can signal it (see [helper.RunAs]); the container's main process
// runs as root for the same reason. Before each start of the helper an exec as root checks that
// directory and the binary's SHA-256, and installs the binary again if anything differs. When the helper cannot run — another CPU
// architecture, a dynamically linked binary, a failed start, or it died twice — the backend
// falls back to one exec per command, wrapped in a small sh script that gives the command its
// own process group, confines its working directory and enforces the timeout inside the
// container, since Docker cannot kill an exec'd process. Describe says which mode is in use
// and why.
//
// With [network] mode = "allowlist" the container still has no network ("none"): its one
// way out is Airlock's egress proxy, reached through the helper, which listens on 127.0.0.1
// inside the container for each command and relays to a unix socket the backend made for
// the command's call, in a session directory bind-mounted read-only at /.airlock-egress (see
// [WithEgressProxy]). A network of any kind, even an internal one, would give the container a
// gateway address through which every host service listening on 0.0.0.0 answers; so that
// mode needs the helper and is refused where it cannot run.
//
// A container killed or removed from outside, or a daemon restart, is repaired on the next
// call, and the Result's Notes say the environment was recreated; what cannot be repaired is
// an error that names the problem and the fix.
package docker
