package elicittest_test

import (
	"context"
	"fmt"
	"log"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/elicittest"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A go-sdk tool that asks for a confirmation, run at both protocol
// versions with a user who accepts, then with one who declines. An mcp-go
// server is called the same way, with the Handler of its mcpgo.Server.
func ExampleCall() {
	// In a test, t is the test's *testing.T.
	t := exampleT{}

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
	s := mcp.NewServer(&mcp.Implementation{Name: "contacts", Version: "1"}, nil)
	ev.Install(s)
	mcp.AddTool(s, &mcp.Tool{Name: "delete_contacts"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		ok, err := elicit.Confirm(ctx, "Delete 3 contacts?")
		if err != nil {
			return nil, nil, err
		}
		text := "Nothing deleted."
		if ok {
			text = "Deleted."
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
	endpoint := ev.Handler(s, nil)

	for _, r := range elicittest.Call(t, endpoint, "delete_contacts", nil, elicittest.Accept(map[string]any{"confirm": true})) {
		fmt.Printf("%s: %s\n", r.Protocol, r.Text())
	}
	for _, r := range elicittest.Call(t, endpoint, "delete_contacts", nil, elicittest.Decline()) {
		fmt.Printf("%s: %s (asked %q)\n", r.Protocol, r.Text(), r.Asked[0].Message)
	}
	// Output:
	// 2025-11-25: Deleted.
	// 2026-07-28: Deleted.
	// 2025-11-25: Nothing deleted. (asked "Delete 3 contacts?")
	// 2026-07-28: Nothing deleted. (asked "Delete 3 contacts?")
}

// exampleT stands in for the *testing.T an Example does not have: it
// prints what would fail the test.
type exampleT struct{ testing.TB }

func (exampleT) Helper() {}

func (exampleT) Errorf(format string, args ...any) { fmt.Printf("FAIL: "+format+"\n", args...) }

func (exampleT) Fatalf(format string, args ...any) { log.Fatalf(format, args...) }
