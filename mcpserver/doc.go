// Package mcpserver serves Airlock's tools over the Model Context Protocol, so that a coding
// agent (Claude Code, Codex, Cursor, Gemini CLI, Goose…) can use Airlock as its hands.
//
// It is a front end and nothing more: every tools/call becomes one call on one session of
// the shared runtime, through the whole road (registry, schema, policy, approval,
// scheduler, handler, receipt). The server decides nothing itself. What it adds is what MCP
// needs:
//
//   - Listing. Tools come from the registry with their own JSON Schemas and annotations
//     (read-only for read tools, destructive for the rest). A tool is listed only when its
//     toolset is enabled ([tools] enabled), allowed_tools admits it, and the environment
//     meets its needs; [Check] says why each one is or is not.
//   - Results. The model reads the call's content; structuredContent carries status,
//     error_code, retryable, exit_code and the receipt's ID and SHA-256. A refusal is an
//     ordinary result with isError and the reason — never a protocol error, which a client
//     would show as a crash rather than something the model can act on.
//   - Progress and cancellation. With a progress token, a long command's output so far goes
//     out as progress notifications; a client's cancellation cancels the call, which kills
//     the command's process tree, and the receipt says interrupted.
//   - Approvals that survive the client's timeout. The runtime waits for a person (package
//     engine writes the question to the store `airlock approvals` answers from another
//     terminal); the server is one way to ask: MCP elicitation (the multi-round-trip input
//     request on protocol 2026-07-28, elicitation/create before it), with the question as
//     the runtime renders it, escaped. When no answer comes in time the call returns at once
//     with status approval_pending and the approval's ID, and approval_wait (or the same
//     call again) gets the result.
//
// Nothing but protocol goes to stdout: logs go to the logger the caller gives (stderr).
package mcpserver
