// Package procgroup runs one command as a process group that lives and dies as one: the
// command leads a session of its own (so a group of its own, with no controlling terminal)
// and gets only its standard streams as descriptors; a timeout or cancel sends TERM to the
// whole group and KILL after a grace period, whatever the command leaves running in its
// group is killed when it exits, and output pipes are drained with a bound so that a process
// that escaped the group cannot hold the caller forever. What escapes the group (a child
// that calls setsid) is killed by the sweep where this process is a subreaper (see
// [EnableSubreaper]; the resident helper is), and by the PID
// namespace's end where the command runs in one. A Wait on a thread in the command's own
// Landlock domain (Spec.Restricted) only looks for escapees there and has them killed from
// another goroutine, since from that domain it could signal only its own command.
//
// Both places where Airlock starts processes itself use it: the local backend on the host,
// and the resident helper (airlock helper) inside a container or on an SSH host. It is a
// mechanism, not a backend: it knows nothing of workspaces, environments or policy.
package procgroup
