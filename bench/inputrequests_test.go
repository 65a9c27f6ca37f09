package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
)

// BenchmarkInputRequests measures one tool call on 2026-07-28 that asks
// for a confirmation, from the client's call to its result, with a go-sdk
// client over in-memory transports that answers the input request at once
// and calls again (the go-sdk client does both rounds itself):
//
//   - bare: a tool that returns an input-required result with a plain
//     requestState and reads the answer from the retry's inputResponses,
//     with nothing sealed, stored or checked beyond what the go-sdk does;
//   - memory: the same tool with elicit.Confirm over the memory store: a
//     sealed, call-bound requestState, its one-shot claim and commit, the
//     answer validated.
//
// Run it alone with:
//
//	go test -run XXX -bench InputRequests ./bench
func BenchmarkInputRequests(b *testing.B) {
	b.Run("bare", func(b *testing.B) {
		s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "confirm"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if r, ok := req.Params.InputResponses["confirm"].(*mcp.ElicitResult); ok && req.Params.RequestState == "bare" {
				if r.Action == "accept" && r.Content["confirm"] == true {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "true"}}}, nil, nil
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "false"}}}, nil, nil
			}
			var res mcp.CallToolResult
			if err := json.Unmarshal([]byte(`{"resultType":"input_required"}`), &res); err != nil {
				return nil, nil, err
			}
			res.InputRequests = mcp.InputRequestMap{"confirm": &mcp.ElicitParams{Message: elicitMessage, RequestedSchema: confirmSchema}}
			res.RequestState = "bare"
			return &res, nil, nil
		})
		benchInputRequests(b, s)
	})
	b.Run("memory", func(b *testing.B) {
		st := memory.New(nil)
		b.Cleanup(func() { st.Close() })
		benchInputRequests(b, confirmServer(b, st))
	})
}

// confirmServer returns a server with elicitvault over st and a tool,
// confirm, that asks elicit.Confirm and answers "true" or "false".
func confirmServer(tb testing.TB, st store.Store) *mcp.Server {
	keys, err := ring.New([]byte("bench secret: thirty-two bytes or more"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	ev, err := elicit.New((*keyring.Keyring)(keys), st, nil)
	if err != nil {
		tb.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	ev.Install(s)
	mcp.AddTool(s, &mcp.Tool{Name: "confirm"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		ok, err := elicit.Confirm(ctx, elicitMessage)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(ok)}}}, nil, nil
	})
	return s
}

func benchInputRequests(b *testing.B, s *mcp.Server) {
	ctx := context.Background()
	_, cs := confirmingClient(b, s, "2026-07-28")
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "confirm"})
		if err != nil {
			b.Fatal(err)
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "true" || res.IsError {
			b.Fatalf("got %+v", res.Content[0])
		}
	}
}
