// Package elicitlink reaches what package elicit keeps unexported, for the
// other packages of the repository: the front-ends built on an Elicitor
// (mcpgo, elicit/oauth), the CLI's conformance fixtures and the
// benchmarks. Package elicit sets the functions when it is initialized;
// every importer of this package imports elicit too, so they are set
// before anyone calls them.
package elicitlink

import (
	"context"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	// Engine returns the engine of an *elicit.Elicitor, or nil for
	// anything else (an Elicitor not made by elicit.New included).
	Engine func(elicitor any) *engine.Engine

	// NewContext returns ctx carrying an *elicit.Elicitor and the tool
	// call req, as the Elicitor's middleware does for a handler: for code
	// that calls elicit.Form outside a handler (benchmarks).
	NewContext func(ctx context.Context, elicitor any, req *mcp.CallToolRequest) context.Context

	// InputKey returns the elicit.Option that sets the key of an
	// elicitation's input request on 2026-07-28 (by default derived from
	// its random ID), for the conformance fixtures, which expect given
	// keys.
	InputKey func(key string) any
)
