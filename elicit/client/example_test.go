package client_test

import (
	"context"
	"fmt"
	"log"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// terminal stands for a UI that asks a person; this one fills in every
// required string field with "Ada" and declines links.
type terminal struct{}

func (terminal) Form(_ context.Context, f *client.FormRequest) (*client.Answer, error) {
	fmt.Printf("%s asks: %s\n", f.Server, f.Message)
	content := map[string]any{}
	for _, fd := range f.Fields {
		fmt.Printf("  %s (%s) %s\n", fd.Title, fd.Kind, fd.Hint())
		if fd.Required && fd.Kind == client.String {
			content[fd.Name] = "Ada"
		}
	}
	return &client.Answer{Action: elicit.Accept, Content: content}, nil
}

func (terminal) ConsentURL(_ context.Context, u *client.URLRequest) (elicit.Action, error) {
	fmt.Printf("open %s (host %s)? no\n", u.URL, u.Host)
	return elicit.Decline, nil
}

func Example() {
	ctx := context.Background()

	// A server whose tool asks for a name.
	server := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "greet"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Who are you?", RequestedSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"name": map[string]any{"type": "string", "title": "Name", "maxLength": 40}},
			"required":   []any{"name"},
		}})
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Hello, %v!", res.Content["name"])}}}, nil, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()

	// The client: its elicitations go to the terminal UI, checked.
	h := client.New(&client.Options{Form: terminal{}, URL: terminal{}, AllowedHosts: []string{"*.example.com"}})
	// Attach: the server gets exactly what the user submitted, without
	// the defaults the go-sdk client would add.
	opts := &mcp.ClientOptions{}
	h.Install(opts)
	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, opts)
	h.Attach(c)
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// greeter asks: Who are you?
	//   Name (string) at most 40 characters
	// Hello, Ada!
}
