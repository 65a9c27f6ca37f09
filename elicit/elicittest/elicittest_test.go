package elicittest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/elicittest"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type order struct {
	Item  string `json:"item"`
	Count int    `json:"count"`
}

// newServer returns the MCP endpoint of a go-sdk server with elicitvault
// installed and its tools: "order" asks a form then a confirmation; "pay"
// sends the user to a link whose page completes the elicitation. The
// pages are on a server of their own.
func newServer(t *testing.T) http.Handler {
	t.Helper()
	ev := fronttest.NewPagedElicitor(t, nil)
	s := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	ev.Install(s)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "order"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		o, err := elicit.Form[order](ctx, "What would you like?")
		if err != nil {
			return nil, nil, err
		}
		if o.Action != elicit.Accept {
			return text("no order: " + string(o.Action)), nil, nil
		}
		ok, err := elicit.Confirm(ctx, fmt.Sprintf("Order %d %s?", o.Content.Count, o.Content.Item))
		if err != nil {
			return nil, nil, err
		}
		return text(fmt.Sprintf("ordered %d %s: %v", o.Content.Count, o.Content.Item, ok)), nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "pay"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		a, err := elicit.URL(ctx, "Pay for your order")
		if err != nil {
			return nil, nil, err
		}
		return text("payment: " + string(a)), nil, nil
	})
	return ev.Handler(s, nil)
}

func TestCall(t *testing.T) {
	s := newServer(t)
	runs := elicittest.Call(t, s, "order", nil,
		elicittest.Accept(map[string]any{"item": "tea", "count": 2}),
		elicittest.Accept(map[string]any{"confirm": true}))
	if len(runs) != 2 || runs[0].Protocol != "2025-11-25" || runs[1].Protocol != "2026-07-28" {
		t.Fatalf("runs %+v", runs)
	}
	for _, r := range runs {
		if r.Text() != "ordered 2 tea: true" || len(r.Asked) != 2 || r.Asked[0].Message != "What would you like?" ||
			r.Asked[1].Message != "Order 2 tea?" || r.Asked[0].Schema["properties"] == nil || r.Asked[1].Answer != "accept" {
			t.Errorf("%s: %q, asked %+v", r.Protocol, r.Text(), r.Asked)
		}
	}
	for _, r := range elicittest.Call(t, s, "order", nil, elicittest.Decline()) {
		if r.Text() != "no order: decline" || len(r.Asked) != 1 {
			t.Errorf("%s: %q", r.Protocol, r.Text())
		}
	}
	for _, r := range elicittest.Call(t, s, "order", nil, elicittest.Cancel()) {
		if r.Text() != "no order: cancel" {
			t.Errorf("%s: %q", r.Protocol, r.Text())
		}
	}
}

func TestOpenURL(t *testing.T) {
	s := newServer(t)
	var visits atomic.Int32
	visit := func(ctx context.Context, link string) error {
		visits.Add(1)
		return elicittest.Visit(ctx, link)
	}
	for _, r := range elicittest.Call(t, s, "pay", nil, elicittest.OpenURL(visit)) {
		if r.Text() != "payment: accept" || len(r.Asked) != 1 || r.Asked[0].Mode != "url" || r.Asked[0].URL == "" {
			t.Errorf("%s: %q (%v), asked %+v", r.Protocol, r.Text(), r.Err, r.Asked)
		}
	}
	if n := visits.Load(); n != 2 {
		t.Errorf("visited %d times, want 2", n)
	}
	for _, r := range elicittest.Call(t, s, "pay", nil, elicittest.Decline()) {
		if r.Text() != "payment: decline" {
			t.Errorf("%s: %q", r.Protocol, r.Text())
		}
	}
}

// Visit fails on a page that does not answer 200.
func TestVisit(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	defer hs.Close()
	if err := elicittest.Visit(t.Context(), hs.URL); err == nil {
		t.Error("a 404 page visited without error")
	}
}

// A user who never answers: on 2025-11-25 the server's TTL ends the call,
// on 2026-07-28 the client gives up; either way no goroutine of the call
// is left once CallAt returns.
func TestNever(t *testing.T) {
	h := newServer(t)
	before := runtime.NumGoroutine()
	r := elicittest.CallAt(t, h, "2026-07-28", "order", nil, elicittest.Never(50*time.Millisecond))
	if r.Err == nil || len(r.Asked) != 1 || r.Asked[0].Answer != "never answer" {
		t.Errorf("got %q, %v, asked %+v", r.Text(), r.Err, r.Asked)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines left behind", n-before)
	}
}
