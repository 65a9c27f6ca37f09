package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/mcpgo"
	"github.com/google/jsonschema-go/jsonschema"
	mg "github.com/mark3labs/mcp-go/mcp"
	mgserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The reference server on mark3labs/mcp-go (serve --sdk mcp-go): the same
// tools, written once against elicit's SDK-neutral calls, registered on an
// mcp-go server with elicitvault's mcp-go front-end (module mcpgo)
// installed, and served by it: Streamable HTTP behind the requestState
// check, the pages beside it, or stdio.

// SDKs serve can run on.
const (
	sdkGo    = "go-sdk"
	sdkMCPGo = "mcp-go"
)

// newMCPGo builds the mcp-go server of r.
func (r *reference) newMCPGo() {
	r.mg = mgserver.NewMCPServer("elicitvault", moduleVersion(),
		mgserver.WithTitle(serverTitle),
		mgserver.WithInstructions(instructions),
		mgserver.WithToolCapabilities(true),
		mgserver.WithLogging())
	// Anonymous stateless clients behind the proxies are counted by what
	// those forwarded, as on the go-sdk Handler.
	r.front = mcpgo.New(r.ev, r.mg, &mcpgo.Options{TrustedProxies: r.httpOpts.TrustedProxies})
}

// addTool registers a tool of the reference server on the server of each
// SDK r serves: the go-sdk's always, mcp-go's with --sdk mcp-go.
func addTool[In any](r *reference, t *mcp.Tool, h mcp.ToolHandlerFor[In, any]) {
	mcp.AddTool(r.server, t, h)
	if r.mg != nil {
		addMCPGoTool(r.mg, t, h)
	}
}

// addMCPGoTool registers the go-sdk tool handler h on the mcp-go server
// m. The handlers read nothing of the go-sdk's request (elicit's calls
// take the call from the context): h gets one with the tool's name and
// arguments. An error of an elicitation that stopped the call (input
// requests, -32042) goes to the front-end as it is; any other error is a
// tool error, as the go-sdk makes it.
func addMCPGoTool[In any](m *mgserver.MCPServer, t *mcp.Tool, h mcp.ToolHandlerFor[In, any]) {
	schema, err := jsonschema.For[In](nil)
	if err != nil {
		panic(err)
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		panic(err)
	}
	tool := mg.NewToolWithRawSchema(t.Name, t.Description, raw)
	tool.Title = t.Title
	m.AddTool(tool, func(ctx context.Context, req mg.CallToolRequest) (*mg.CallToolResult, error) {
		var in In
		args := req.Params.RawArguments
		if len(args) > 0 {
			if err := json.Unmarshal(args, &in); err != nil {
				return mg.NewToolResultError("invalid arguments: " + err.Error()), nil
			}
		}
		res, _, err := h(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: t.Name, Arguments: args}}, in)
		switch {
		case errors.Is(err, elicit.ErrInputRequired):
			return nil, err
		case err != nil:
			return mg.NewToolResultError(err.Error()), nil
		}
		return mcpgoResult(res), nil
	})
}

// mcpgoResult converts the text result of a reference tool.
func mcpgoResult(res *mcp.CallToolResult) *mg.CallToolResult {
	out := &mg.CallToolResult{IsError: res.IsError}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out.Content = append(out.Content, mg.NewTextContent(tc.Text))
		}
	}
	return out
}

// mcpgoHandler serves MCP through the mcp-go front-end, and the pages.
func (r *reference) mcpgoHandler() http.Handler {
	h := r.front.Handler(nil,
		mgserver.WithSessionIdleTTL(r.httpOpts.SessionTimeout),
		// mcp-go's log lines may name sessions.
		mgserver.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)))
	if r.fixtureState != nil {
		h = mgRequireSampling(h)
	}
	return h
}
