// Package fronttest holds what the tests of both front-ends (elicit on the
// go-sdk, mcpgo on mcp-go) share: an Elicitor on a memory store, a bare
// go-sdk server that asks, and a raw JSON-RPC client of MCP 2026-07-28 and
// its tasks extension over HTTP, so that both check the same wire.
package fronttest
