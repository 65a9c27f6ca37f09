package mcpgo_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// waitingUser leaves the form "first" unanswered until the request ends,
// and answers every other one.
type waitingUser struct{ asked chan struct{} }

func (u *waitingUser) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	if req.Params.Message == "first" {
		u.asked <- struct{}{}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
		}
		return nil, errors.New("not answered")
	}
	res := &mcp.ElicitationResult{}
	res.Action = mcp.ElicitationResponseActionAccept
	res.Content = map[string]any{"name": "Bo", "email": "bo@example.com"}
	return res, nil
}

// On mcp-go too, a second form in a 2025-11-25 session cancels the first,
// which waits on the same node (the session's pending form is kept in the
// process).
func TestSecondFormCancelsFirst(t *testing.T) {
	ev, m, f := newFrontEnd(t, nil, server.WithToolCapabilities(false))
	firstErr := make(chan error, 1)
	m.AddTool(mcp.NewTool("first"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_, err := elicit.Form[contact](ctx, "first", elicit.WithTTL(10*time.Second))
		firstErr <- err
		return mcp.NewToolResultText("first"), nil
	})
	m.AddTool(mcp.NewTool("add_contact"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := elicit.Form[contact](ctx, "second")
		if err != nil {
			return nil, err
		}
		return mcp.NewToolResultText(string(res.Action) + " " + res.Content.Name), nil
	})
	srv := httptest.NewServer(f.Handler(nil))
	t.Cleanup(func() {
		ev.Close()
		srv.Close()
	})
	u := &waitingUser{asked: make(chan struct{}, 1)}
	c := dialWith(t, srv.URL+elicit.MCPPath, "2025-11-25", u)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "first"
		c.CallTool(context.Background(), req)
	}()
	select {
	case <-u.asked:
	case <-time.After(5 * time.Second):
		t.Fatal("the first form was not asked")
	}
	if got, err := callText(t, c, "add_contact"); err != nil || !strings.HasPrefix(got, "accept Bo") {
		t.Fatalf("second form: %q, %v", got, err)
	}
	fronttest.RecvErr(t, firstErr, elicit.ErrReplaced, "the first form's end")
}
