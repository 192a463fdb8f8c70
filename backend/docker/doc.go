// Package docker runs commands in a hardened container through the Docker Engine API.
//
// It is the backend for untrusted, agent-written code. The container is the boundary, so it
// is built to be one by default: every capability dropped (an add-list is configurable),
// no-new-privileges, pids, memory and CPU limits, no network, a non-root user, /tmp as a
// tmpfs, an init process that reaps zombies, and only the exact host directories the
// configuration names mounted — never /, /etc, a home directory's root or a Docker or
// containerd socket, with symlinks resolved before deciding (see [Config.Validate]).
//
// The configuration is first expressed as an OCI runtime "spec" (mounts, capabilities,
// resources) and translated once to the Engine API's types; the spec's SHA-256, with the
// image ID, is the container's fingerprint. A reused container is found by name (prefix +
// fingerprint) and its fingerprint label is checked, so a different configuration always
// gets a container of its own. Containers carry labels naming their owner, session, creating
// process and idle TTL; [GC] (airlock gc) removes those whose session is gone or whose idle
// TTL passed. Idle time is measured from the modification time of /.airlock/last-use inside
// the container, which every command touches, or from the container's start when the root
// filesystem is read-only.
//
// Commands normally go to a resident helper (package agent, the airlock binary itself,
// copied in once) over one attached exec stream, which costs about a millisecond per
// command instead of the ~45 ms of a docker exec. When the helper cannot run — another CPU
// architecture, a dynamically linked binary, a failed start, or it died twice — the backend
// falls back to one exec per command, wrapped in a small sh script that gives the command its
// own process group, confines its working directory and enforces the timeout inside the
// container, since Docker cannot kill an exec'd process. Describe says which mode is in use
// and why.
//
// A container killed or removed from outside, or a daemon restart, is repaired on the next
// call, and the Result's Notes say the environment was recreated; what cannot be repaired is
// an error that names the problem and the fix.
package docker
