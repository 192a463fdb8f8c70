// Package engine is Airlock's runtime: it builds everything a tool call needs from a
// validated config once — the tool registry, the path policy, the approval gate, the
// receipt ledger and the backends — and hands out sessions.
//
// Every front end (the CLI's call, exec and demo, the MCP server, the HTTP server to come)
// adapts one [Engine]; none of them assembles a pipeline, knows a backend type or decides
// policy. A [Session] is one agent's conversation: its own environment where the backend has
// one per session (a container per session on Docker), its denial budget, the hashes of the
// files it read or wrote (for stale_file), its cached approvals and the calls of it that wait
// for a person. Sessions idle longer than the configured TTL are reaped; [Engine.Close] ends
// them all. Where the backend's section asks for a warm pool (Docker's warm_pool), the engine
// owns it (package envpool): a session without a name takes a ready environment from it, or
// opens one cold when none is ready; Close closes the pool with the engine.
//
// Waiting for a person is the runtime's too ([WithPendingApprovals]): the approvals store,
// the question a person reads (built from what each tool declares, its preview taken
// through the tool's own road), expiry and the pending status and ID on a result are the
// same for every front end; a front end only adds a way to ask ([approval.WithAsker]).
//
// The engine is fail-closed by construction: it always installs the path policy and the
// approval gate, and the pipeline refuses to be built without them.
package engine
