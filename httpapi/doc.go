// Package httpapi is Airlock's HTTP front end, served by `airlock serve`: one runtime
// shared by many agents, each in sessions of its own.
//
// It adapts the runtime ([engine.Engine]) and decides nothing about calls itself. What it
// adds is what a network service needs and a local pipe does not:
//
//   - Who is asking. Every request but /healthz and /readyz carries a bearer token; the
//     token's name is the caller, recorded in each call's receipt, and a token sees only the
//     sessions it opened (another token's session is "not found", so its existence does not
//     leak). The server listens on loopback unless told otherwise.
//   - Sessions. POST /v1/sessions opens a runtime session and says which isolation is really
//     in force (the environment's own description); each MCP session at /mcp is a runtime
//     session of its own too, so two agents never share a denial budget, an approval cache
//     or a job list, and the runtime session ends when the MCP session does.
//   - Calls as models send them: one call, an array, or an OpenAI assistant message with
//     tool_calls, answered with the `tool` messages ready to append. An Idempotency-Key
//     makes a retried request return the stored answer instead of running twice.
//   - One error envelope, {"error":{"code","message"}}, with stable codes (see [Codes]).
//   - Graceful shutdown: [Server.Shutdown] stops taking requests, lets running calls finish
//     up to a deadline, then ends the sessions, which cancels what still runs; the runtime
//     writes every call's receipt, interrupted ones included.
package httpapi
