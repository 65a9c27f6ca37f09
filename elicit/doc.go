// Package elicit asks the user of an MCP client for input in the middle of a
// tool call, with one call that works across protocol versions, and keeps
// everything that waits in between sealed.
package elicit
