package elicit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// exampleElicitor is what every server sets up once: the keyring (from
// MCP_ELICITATION_SECRET in a real server: keyring.Load(nil)), a store
// shared by the server's nodes, and the Elicitor installed on the server.
func exampleElicitor(cfg *elicit.Config) (*elicit.Elicitor, *mcp.Server) {
	keys, err := keyring.New([]byte("example secret that is at least 32 bytes"))
	if err != nil {
		log.Fatal(err)
	}
	ev, err := elicit.New(keys, memory.New(nil), cfg)
	if err != nil {
		log.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	ev.Install(server)
	return ev, server
}

// exampleCall connects a client that answers every elicitation with
// answer, at protocol version, and prints the tool's result.
func exampleCall(server *mcp.Server, version, tool string, answer func(*mcp.ElicitRequest) *mcp.ElicitResult) {
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return answer(req), nil
		},
	})
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
}

func textResult(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// Warehouse is the form of ExampleForm.
type Warehouse struct {
	Site     string `json:"site"`
	Quantity int    `json:"quantity"`
}

// warehouseForm is Warehouse's schema, refined with what a Go type cannot
// say: made once, used by every call.
var warehouseForm = mustSchema(elicit.SchemaFor[Warehouse](func(s *jsonschema.Schema) error {
	site, quantity := s.Properties["site"], s.Properties["quantity"]
	site.Title = "Warehouse"
	var lis, ber any = "lis", "ber"
	site.OneOf = []*jsonschema.Schema{{Const: &lis, Title: "Lisbon"}, {Const: &ber, Title: "Berlin"}}
	quantity.Minimum, quantity.Maximum = jsonschema.Ptr(1.0), jsonschema.Ptr(500.0)
	quantity.Default = json.RawMessage(`100`)
	return nil
}))

func mustSchema(s *elicit.Schema, err error) *elicit.Schema {
	if err != nil {
		log.Fatal(err) // a bug in the form: fail at start-up
	}
	return s
}

// A form derived from a Go type, refined with SchemaFor, answered on both
// protocol generations: the handler is the same code for each.
func ExampleForm() {
	ev, server := exampleElicitor(nil)
	defer ev.Close()

	mcp.AddTool(server, &mcp.Tool{Name: "restock"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := elicit.Form[Warehouse](ctx, "Which warehouse should be restocked?", elicit.WithSchema(warehouseForm))
		if err != nil {
			return nil, nil, err // unchanged: on 2026-07-28 this is how the question is asked
		}
		if res.Action != elicit.Accept {
			return textResult("not restocked (%s)", res.Action), nil, nil
		}
		return textResult("restocking %d at %s", res.Content.Quantity, res.Content.Site), nil, nil
	})

	answer := func(*mcp.ElicitRequest) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"site": "ber", "quantity": 40}}
	}
	exampleCall(server, "2025-11-25", "restock", answer) // elicitation/create, the call waits
	exampleCall(server, "2026-07-28", "restock", answer) // input requests, the call runs again
	// Output:
	// restocking 40 at ber
	// restocking 40 at ber
}

// Confirm is true only when the user accepted and ticked the box.
func ExampleConfirm() {
	ev, server := exampleElicitor(nil)
	defer ev.Close()

	mcp.AddTool(server, &mcp.Tool{Name: "delete_contacts"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		ok, err := elicit.Confirm(ctx, "Delete 47 contacts?")
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return textResult("kept them"), nil, nil
		}
		return textResult("deleted 47 contacts"), nil, nil
	})

	exampleCall(server, "2026-07-28", "delete_contacts", func(*mcp.ElicitRequest) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}
	})
	exampleCall(server, "2026-07-28", "delete_contacts", func(*mcp.ElicitRequest) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "decline"}
	})
	// Output:
	// deleted 47 contacts
	// kept them
}

// URL mode: the user opens the server's consent page in the browser and
// answers there, never through the client. Handler serves MCP and the
// page; here the "browser" is an HTTP POST of the page's Accept button.
func ExampleURL() {
	srv := httptest.NewUnstartedServer(nil)
	ev, server := exampleElicitor(&elicit.Config{BaseURL: "http://" + srv.Listener.Addr().String(), ServerName: "Example Contacts"})
	defer ev.Close()
	mcp.AddTool(server, &mcp.Tool{Name: "connect_account"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		action, err := elicit.URL(ctx, "Connect your Example account")
		if err != nil {
			return nil, nil, err
		}
		return textResult("connect: %s", action), nil, nil
	})
	srv.Config.Handler = ev.Handler(server, nil)
	srv.Start()
	defer srv.Close()

	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				// The client shows the URL and its host, and opens it
				// only with the user's consent; the user accepts there.
				go func() {
					resp, err := http.PostForm(req.Params.URL, url.Values{"action": {"accept"}})
					if err == nil {
						resp.Body.Close()
					}
				}()
				return &mcp.ElicitResult{Action: "accept"}, nil
			},
		})
		cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL + elicit.MCPPath},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			log.Fatal(err)
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "connect_account"})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(version, res.Content[0].(*mcp.TextContent).Text)
		cs.Close()
	}
	// Output:
	// 2025-11-25 connect: accept
	// 2026-07-28 connect: accept
}
