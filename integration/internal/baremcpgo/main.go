// Command baremcpgo is the mark3labs/mcp-go baseline of the end-to-end
// benchmark: an MCP server on mcp-go alone, without elicitvault, with the
// same delete_contacts tool as `elicitvault serve` and as the go-sdk
// baseline (internal/bare), at the same path. Before 2026-07-28 the tool
// asks with mcp-go's MCPServer.RequestElicitation on the session's stream;
// on 2026-07-28 it returns an input-required result
// (server.NewInputRequestBuilder) with a plain requestState and reads the
// answer from the retry's inputResponses. Nothing is sealed, stored or
// checked beyond what mcp-go does: it is what a server pays without
// elicitvault, not something to deploy.
//
//	baremcpgo --addr 127.0.0.1:0
//
// It prints "bare: MCP at http://ADDR/mcp" on stderr once it listens.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"

	"github.com/elicitvault/elicitvault/integration/internal/bareserve"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// confirmSchema is the schema elicit.Confirm asks with.
const confirmSchema = `{"type":"object","properties":{"confirm":{"type":"boolean","title":"Confirm","default":false}},"required":["confirm"]}`

// state is the plain requestState of the 2026-07-28 round.
const state = "bare"

func params(n int) mcp.ElicitationParams {
	return mcp.ElicitationParams{
		Message:         fmt.Sprintf("Delete %d contacts? This cannot be undone.", n),
		RequestedSchema: json.RawMessage(confirmSchema),
	}
}

func confirmed(r *mcp.ElicitationResult) bool {
	if r == nil || r.Action != mcp.ElicitationResponseActionAccept {
		return false
	}
	content, _ := r.Content.(map[string]any)
	ok, _ := content["confirm"].(bool)
	return ok
}

func done(r *mcp.ElicitationResult, n int) *mcp.CallToolResult {
	if !confirmed(r) {
		return mcp.NewToolResultText("Nothing was deleted.")
	}
	return mcp.NewToolResultText(fmt.Sprintf("Deleted %d contacts.", n))
}

// deleteContacts is the tool on both protocol generations.
func deleteContacts(s *server.MCPServer) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		n := req.GetInt("count", 0)
		if n <= 0 {
			n = 47
		}
		if !server.IsModernRequest(ctx) {
			res, err := s.RequestElicitation(ctx, mcp.ElicitationRequest{
				Request: mcp.Request{Method: string(mcp.MethodElicitationCreate)},
				Params:  params(n),
			})
			if err != nil {
				return nil, err
			}
			return done(res, n), nil
		}
		if r := server.ElicitationResponse(req.Params.InputResponses, "confirm"); r != nil && req.Params.RequestState == state {
			return done(r, n), nil
		}
		return server.NewInputRequestBuilder(state).Elicit("confirm", params(n)).ToolResult(), nil
	}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	log.SetFlags(0)
	s := server.NewMCPServer("bare", "1", server.WithToolCapabilities(false), server.WithElicitation())
	s.AddTool(mcp.NewTool("delete_contacts",
		mcp.WithDescription("Deletes contacts after the user confirms."),
		mcp.WithNumber("count")), deleteContacts(s))
	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(s, server.WithEndpointPath("/mcp")))
	bareserve.Serve("bare", *addr, mux)
}
