// Package receipt owns the audit trail: what was decided about each call and what then
// happened, kept apart because a decision is not an outcome.
//
// A [Receipt] records both for one call. The [Ledger] appends receipts as JSON Lines events
// — "completed" for a call that is over, and for calls that run, a "dispatched" event before
// the handler starts, so that a crash mid-call still leaves a line saying the handler began —
// each line carrying the SHA-256 of the line before it. Lines are written with O_APPEND and
// fsync under an exclusive file lock, so a crash leaves at most one torn last line, and
// [Verify] finds any edited, removed or reordered line.
package receipt
