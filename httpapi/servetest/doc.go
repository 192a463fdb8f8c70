// Package servetest drives the built `airlock serve` binary as a user runs it: a real
// process on 127.0.0.1, real HTTP, real signals, and the official TypeScript MCP client
// over /mcp. The in-process tests of package httpapi cover the API itself.
package servetest
