// Package clienttest drives the built `airlock mcp` binary with real MCP clients: the
// official TypeScript SDK client (run with Node), the Go SDK client over stdio, and the
// Claude Code and Codex CLIs for what `airlock install` writes. It also holds the test of
// an approval answered by `airlock approvals` from a second process, and the benchmark of
// the MCP layer's own cost per call.
//
// The npm packages come from AIRLOCK_NPM_DIR (default /var/cache/airlock/npm), installed
// by .ci/test outside the clone: sdk/ holds @modelcontextprotocol/sdk, clients/ the two
// CLIs. Without them a test skips, unless AIRLOCK_REQUIRE_MCP_CLIENTS=1 (CI) makes that a
// failure.
package clienttest
