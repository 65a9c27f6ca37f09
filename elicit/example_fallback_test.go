package elicit_test

import (
	"context"
	"fmt"
	"log"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool that does something before it asks, for a client that cannot
// elicit: the model relays the question and sends the answer with
// sendElicitationResult, and the handler runs again from the start. The
// draft it created on the first run is carried in the call's sealed state,
// so the second run does not create another.
func ExampleSaveState() {
	ctx := context.Background()
	keys, err := keyring.New([]byte("example secret that is at least 32 bytes"))
	if err != nil {
		log.Fatal(err)
	}
	st := memory.New(nil)
	defer st.Close()
	ev, err := elicit.New(keys, st, &elicit.Config{Fallbacks: []elicit.Fallback{elicit.LLMMediated}})
	if err != nil {
		log.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "mail", Version: "1"}, nil)
	ev.Install(server)

	drafts := 0
	type progress struct {
		Draft string `json:"draft"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "send_newsletter"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		var p progress
		if ok, err := elicit.LoadState(ctx, &p); err != nil {
			return nil, nil, err
		} else if !ok { // the first run
			drafts++
			p.Draft = fmt.Sprintf("draft-%d", drafts)
			if err := elicit.SaveState(ctx, p); err != nil {
				return nil, nil, err
			}
		}
		ok, err := elicit.Confirm(ctx, "Send "+p.Draft+" to 1,200 subscribers?")
		if err != nil {
			return nil, nil, err // unchanged: the middleware hands the question to the model
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s sent: %v", p.Draft, ok)}}}, nil, nil
	})

	// A client without the elicitation capability.
	ct, stt := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, stt, nil); err != nil {
		log.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_newsletter"})
	if err != nil {
		log.Fatal(err)
	}
	pending := res.Meta[elicit.MetaElicitationPending].(map[string]any)
	fmt.Println("the model is asked to ask:", pending["message"])

	// The user said yes; the model sends the answer.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: elicit.FallbackTool, Arguments: map[string]any{
		"elicitId": pending["elicitationId"],
		"action":   "accept",
		"content":  map[string]any{"confirm": true},
	}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	fmt.Println("drafts created:", drafts)
	// Output:
	// the model is asked to ask: Send draft-1 to 1,200 subscribers?
	// draft-1 sent: true
	// drafts created: 1
}
