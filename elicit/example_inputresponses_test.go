package elicit_test

import (
	"context"
	"log"
	"net/http"
	"os"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Serving MCP over Streamable HTTP: malformed inputResponses get the
// JSON-RPC error -32602 naming the key.
func ExampleCheckInputResponses() {
	server := mcp.NewServer(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	// ev.Install(server), then the tools.
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
	http.Handle("/mcp", elicit.CheckInputResponses(h))
}

// Serving MCP over stdio: malformed inputResponses get the JSON-RPC error
// -32602 naming the key, and nothing of the answers is quoted back.
func ExampleCheckTransport() {
	server := mcp.NewServer(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	// ev.Install(server), then the tools.
	t := elicit.CheckTransport(&mcp.IOTransport{Reader: os.Stdin, Writer: os.Stdout})
	if err := server.Run(context.Background(), t); err != nil {
		log.Print(err)
	}
}

// A client that expects the input request of a confirmation under a given
// key (on protocol 2026-07-28).
func ExampleWithInputKey() {
	server := mcp.NewServer(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "delete"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		ok, err := elicit.Confirm(ctx, "Delete it?", elicit.WithInputKey("confirm_delete"))
		if err != nil {
			return nil, nil, err // on 2026-07-28: the input request confirm_delete
		}
		if !ok {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Kept."}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Deleted."}}}, nil, nil
	})
}
