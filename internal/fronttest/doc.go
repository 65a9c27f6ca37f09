// Package fronttest holds what the tests of both front-ends (elicit on the
// go-sdk, mcpgo on mcp-go) share: an Elicitor on a memory store (with its
// pages on a server of their own), a bare go-sdk server that asks, and a
// raw JSON-RPC client of MCP 2026-07-28 and its tasks extension over HTTP,
// so that both check the same wire; and the small helpers the other
// tests of the repository share too (reads with a deadline, the -32042
// error's elicitation, a buffer a server and its test may use at once).
package fronttest
