// Package local runs commands as child processes of Airlock on the host, confined to a
// workspace directory.
//
// It is the fastest backend and the weakest boundary: a command sees the host's filesystem
// and network. What it does guarantee is that every command runs in its own process group
// with a sanitised environment, that a timeout or cancel kills the whole group (TERM, a short
// grace, then KILL), that background processes a command leaves behind are killed when it
// exits, and that output is capped while it streams.
//
// A process that moves itself to a new session or process group (setsid) escapes the group
// kill, unless the process running the backend is a child subreaper
// (procgroup.EnableSubreaper, which the airlock CLI turns on): then such orphans are handed
// to it and killed when their command ends.
package local
