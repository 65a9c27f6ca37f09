package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/elicitvault/elicitvault/elicit"
	evclient "github.com/elicitvault/elicitvault/elicit/client"
	"github.com/elicitvault/elicitvault/mcpgo/client"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// nameUI stands for a UI that asks a person; this one answers "Ada" to
// the field it is shown.
type nameUI struct{}

func (nameUI) Form(_ context.Context, f *evclient.FormRequest) (*evclient.Answer, error) {
	fmt.Printf("the server asks: %s\n", f.Message)
	for _, fd := range f.Fields {
		fmt.Printf("  %s (%s, required %v)\n", fd.Title, fd.Kind, fd.Required)
	}
	return &evclient.Answer{Action: elicit.Accept, Content: map[string]any{f.Fields[0].Name: "Ada"}}, nil
}

func Example() {
	ctx := context.Background()

	// An mcp-go server whose tool asks for a name.
	s := mcpserver.NewMCPServer("greeter", "1", mcpserver.WithElicitation())
	s.AddTool(mcp.NewTool("greet"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := s.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
			Message:         "Who are you?",
			RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","title":"Name","maxLength":40}},"required":["name"]}`),
		}})
		if err != nil {
			return nil, err
		}
		content, _ := res.Content.(map[string]any)
		return mcp.NewToolResultText(fmt.Sprintf("Hello, %v!", content["name"])), nil
	})

	// The mcp-go client: its elicitations go to the UI, checked.
	h := client.New(&evclient.Options{Form: nameUI{}})
	c, err := mcpclient.NewInProcessClientWithOptions(s, append(h.Options(mcp.ClientCapabilities{}),
		mcpclient.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))...)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		log.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = mcp.Implementation{Name: "example", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		log.Fatal(err)
	}
	call := mcp.CallToolRequest{}
	call.Params.Name = "greet"
	res, err := c.CallTool(ctx, call)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(mcp.TextContent).Text)
	// Output:
	// the server asks: Who are you?
	//   Name (string, required true)
	// Hello, Ada!
}
