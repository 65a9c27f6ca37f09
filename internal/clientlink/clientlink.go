// Package clientlink reaches the SDK-neutral core of an elicit/client
// Handler, for the repository's other client front-end (mcpgo/client):
// elicit/client keeps it unexported, since a go-sdk client needs only
// Handler.Install. Package elicit/client sets Answer
// when it is initialized; every importer of this package imports it too.
package clientlink

import "context"

// Request is one elicitation request, as any MCP SDK's client receives it.
type Request struct {
	Server        string // the server's name, as it introduced itself (unverified); may be empty
	Mode          string // "form" (or empty) or "url"
	Message       string
	Schema        any    // form mode: the requested schema (a JSON object, or a value that encodes to one)
	URL           string // URL mode
	ElicitationID string // URL mode
}

// Answer answers r through the UI of handler, an *elicit/client.Handler,
// with its checks: the action ("accept", "decline" or "cancel") and, for
// an accepted form, exactly the content the user submitted. An error that
// refuses the request matches elicit/client's ErrRefused.
var Answer func(ctx context.Context, handler any, r *Request) (action string, content map[string]any, err error)
