package mcpgo_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/mcpgo"
	"github.com/elicitvault/elicitvault/store/memory"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// An mcp-go server whose tool asks the user to confirm, served over
// Streamable HTTP, and an mcp-go client whose user accepts.
func Example() {
	ctx := context.Background()
	keys, err := keyring.New([]byte("example secret that is at least 32 bytes"))
	if err != nil {
		log.Fatal(err)
	}
	st := memory.New(nil)
	defer st.Close()
	ev, err := elicit.New(keys, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ev.Close()

	s := server.NewMCPServer("contacts", "1.0.0")
	front := mcpgo.New(ev, s, nil)
	s.AddTool(mcp.NewTool("delete_contacts"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ok, err := elicit.Confirm(ctx, "Delete 3 contacts?")
		if err != nil {
			return nil, err // unchanged: on 2026-07-28 this is how the question is asked
		}
		if !ok {
			return mcp.NewToolResultText("Nothing deleted."), nil
		}
		return mcp.NewToolResultText("Deleted."), nil
	})
	srv := httptest.NewServer(front.Handler(nil))
	defer srv.Close()

	// The client: its user confirms.
	tr, err := transport.NewStreamableHTTP(srv.URL + elicit.MCPPath)
	if err != nil {
		log.Fatal(err)
	}
	c := mcpclient.NewClient(tr,
		mcpclient.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}),
		mcpclient.WithElicitationHandler(accepting{}),
		mcpclient.WithProtocolVersion("2025-11-25"))
	if err := c.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = "2025-11-25"
	if _, err := c.Initialize(ctx, init); err != nil {
		log.Fatal(err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "delete_contacts"
	res, err := c.CallTool(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(mcp.TextContent).Text)
	// Output: Deleted.
}

// accepting is a user who accepts every confirmation.
type accepting struct{}

func (accepting) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	res := &mcp.ElicitationResult{}
	res.Action = mcp.ElicitationResponseActionAccept
	res.Content = map[string]any{"confirm": true}
	return res, nil
}

// With authentication, Options.Subject tells elicitvault who the user
// is: mcp-go has no notion of one. Here an http.Handler in front of the
// server leaves the user in the request's context.
func ExampleOptions() {
	keys, err := keyring.New([]byte("example secret that is at least 32 bytes"))
	if err != nil {
		log.Fatal(err)
	}
	ev, err := elicit.New(keys, memory.New(nil), nil)
	if err != nil {
		log.Fatal(err)
	}
	type userKey struct{}
	s := server.NewMCPServer("contacts", "1.0.0")
	front := mcpgo.New(ev, s, &mcpgo.Options{
		Subject: func(ctx context.Context) string {
			user, _ := ctx.Value(userKey{}).(string)
			return user
		},
	})
	_ = front.Handler(nil) // wrap it in the authentication that sets userKey
	fmt.Println("ok")
	// Output: ok
}
