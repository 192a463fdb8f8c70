// Package jobs owns background jobs: commands a model starts with `terminal` and
// `background: true` that outlive the tool call which started them — dev servers, watchers,
// long test runs.
//
// A client gives one tool call about a minute, so a command that runs longer must not hold
// the call. A [Manager] starts the command through the ordinary [backend.Environment.Exec]
// contract on a context of its own, so it works on every backend: the backend still kills
// the whole process tree on a timeout or a kill, and where the backend copies output live
// (Request.Stdout/Stderr, Result.Streamed: local, and Docker and SSH through their resident
// helper's live output frames) the job's output can be read while it runs; where it cannot
// (Docker exec mode, SSH session mode), the output arrives when the job ends and
// [Info.Streaming] says so.
//
// Output is kept in a bounded buffer per job until it is read: each read returns what was
// written since the last one, so no byte is shown twice or skipped, and bytes dropped
// because the buffer filled before anyone read them are counted, never silently lost.
// Jobs belong to a session: [Manager.CloseSession] kills a session's jobs and forgets them,
// and [Manager.Close] kills every job.
//
// Decision is not outcome, even for a call that outlives its call: the call that starts a
// job gets its ordinary receipt from the pipeline (decided, dispatched, executed: the job
// was started), and the manager adds two ledger events of its own, chained in the same
// ledger under the starting call's ID — `job_started` when the command is handed to the
// environment and `job_ended` with its outcome (executed, timeout, interrupted), status and
// exit code when it ends. A crash in between leaves a `job_started` line with no end.
//
// The model reaches jobs through four tools ([Tools]): job_output, job_wait, job_list and
// job_kill.
package jobs
