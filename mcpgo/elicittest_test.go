package mcpgo_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/elicittest"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/mcpgo"
	mgmcp "github.com/mark3labs/mcp-go/mcp"
	mgserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type order struct {
	Item  string `json:"item"`
	Count int    `json:"count"`
}

// The tools of the shop, written once for both SDKs: "order" asks a form
// then a confirmation; "pay" sends the user to a link.
func orderTool(ctx context.Context) (string, error) {
	o, err := elicit.Form[order](ctx, "What would you like?")
	if err != nil {
		return "", err
	}
	if o.Action != elicit.Accept {
		return "no order: " + string(o.Action), nil
	}
	ok, err := elicit.Confirm(ctx, fmt.Sprintf("Order %d %s?", o.Content.Count, o.Content.Item))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("ordered %d %s: %v", o.Content.Count, o.Content.Item, ok), nil
}

func payTool(ctx context.Context) (string, error) {
	a, err := elicit.URL(ctx, "Pay for your order")
	if err != nil {
		return "", err
	}
	return "payment: " + string(a), nil
}

// newShopElicitor returns an Elicitor on a memory store whose URL-mode
// pages are on a server of their own.
func newShopElicitor(t *testing.T) *elicit.Elicitor {
	t.Helper()
	return fronttest.NewPagedElicitor(t, nil)
}

// shopEndpoints are the MCP endpoints of the shop on each SDK.
func shopEndpoints(t *testing.T) map[string]http.Handler {
	tools := map[string]func(context.Context) (string, error){"order": orderTool, "pay": payTool}

	ev := newShopElicitor(t)
	s := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	ev.Install(s)
	for name, tool := range tools {
		mcp.AddTool(s, &mcp.Tool{Name: name}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			text, err := tool(ctx)
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	}

	mev := newShopElicitor(t)
	m := mgserver.NewMCPServer("shop", "1")
	front := mcpgo.New(mev, m, nil)
	for name, tool := range tools {
		m.AddTool(mgmcp.NewTool(name), func(ctx context.Context, _ mgmcp.CallToolRequest) (*mgmcp.CallToolResult, error) {
			text, err := tool(ctx)
			if err != nil {
				return nil, err
			}
			return mgmcp.NewToolResultText(text), nil
		})
	}
	return map[string]http.Handler{"go-sdk": ev.Handler(s, nil), "mcp-go": front.Handler(nil)}
}

// elicittest runs the same tool, with the same script, on both SDKs at
// both protocol versions: forms accepted, declined, cancelled, and a link
// whose page the scripted user completes (elicittest.Visit).
func TestElicittestBothSDKs(t *testing.T) {
	for sdk, endpoint := range shopEndpoints(t) {
		t.Run(sdk, func(t *testing.T) {
			check := func(runs []*elicittest.Run, want string, asked int) {
				t.Helper()
				if len(runs) != 2 { // 2025-11-25, 2026-07-28
					t.Fatalf("%d runs", len(runs))
				}
				for _, r := range runs {
					if r.Err != nil || r.Text() != want || len(r.Asked) != asked {
						t.Errorf("%s: got %q (%v), asked %+v; want %q", r.Protocol, r.Text(), r.Err, r.Asked, want)
					}
				}
			}
			runs := elicittest.Call(t, endpoint, "order", nil,
				elicittest.Accept(map[string]any{"item": "tea", "count": 2}),
				elicittest.Accept(map[string]any{"confirm": true}))
			check(runs, "ordered 2 tea: true", 2)
			for _, r := range runs {
				if r.Asked[0].Mode != "form" || r.Asked[0].Schema["properties"] == nil || r.Asked[1].Message != "Order 2 tea?" {
					t.Errorf("%s: asked %+v", r.Protocol, r.Asked)
				}
			}
			check(elicittest.Call(t, endpoint, "order", nil, elicittest.Decline()), "no order: decline", 1)
			check(elicittest.Call(t, endpoint, "order", nil, elicittest.Cancel()), "no order: cancel", 1)

			runs = elicittest.Call(t, endpoint, "pay", nil, elicittest.OpenURL(nil))
			check(runs, "payment: accept", 1)
			for _, r := range runs {
				if q := r.Asked[0]; q.Mode != "url" || q.URL == "" || q.ElicitationID == "" {
					t.Errorf("%s: asked %+v", r.Protocol, q)
				}
				// notifications/elicitation/complete, on 2025-11-25.
				if r.Protocol == "2025-11-25" && (len(r.Completed) != 1 || r.Completed[0] != r.Asked[0].ElicitationID) {
					t.Errorf("%s: completions %v for elicitation %s", r.Protocol, r.Completed, r.Asked[0].ElicitationID)
				}
			}
			check(elicittest.Call(t, endpoint, "pay", nil, elicittest.Decline()), "payment: decline", 1)
		})
	}
}
