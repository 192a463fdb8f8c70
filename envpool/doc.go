// Package envpool keeps a warm pool: a few sandboxes of one configuration opened before any
// session asks, so that a new session takes a running one (container started, resident
// helper running) instead of waiting for a cold start.
//
// The pool is the runtime's and knows no backend. A backend that can pool declares it in its
// record (backend.Record.WarmPool); the runtime gives the pool a function that opens one
// member through the record (backend.Settings.PoolMember) and the pool does the rest, the
// same for every backend:
//
//   - it fills itself to its size in the background, a few members at a time, and refills
//     after every claim; a make that fails is retried after a growing pause, so a broken
//     configuration costs a log line now and then, never a busy loop;
//   - a new member runs `true` once before it is offered, so that one which cannot run a
//     command is never handed out and a session's first command is not its helper's first;
//   - Take hands the oldest ready member to a session with backend.Claimer.Claim, the
//     backend's atomic claim (a Docker rename, a Kubernetes optimistic-lock update): a
//     member leaves the pool's list under its lock before it is claimed, so no two sessions
//     of one process are handed the same sandbox, and the backend's claim keeps it so across
//     processes;
//   - a member that dies while it waits (backend.Claimer.Lost) is closed and replaced;
//   - an empty pool does not make a session wait: Take says so at once and the caller opens
//     a sandbox cold, so a burst larger than the pool is slower, never refused;
//   - Close stops the fillers, waits for the makes in flight and closes every unclaimed
//     member, so nothing the pool made outlives it (what a killed process leaves is found by
//     `airlock gc`, as for any session's sandbox).
package envpool
