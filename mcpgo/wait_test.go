package mcpgo_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/mcpgo"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// slowUser answers when done is closed (if it is not nil) or after a
// while, or never.
type slowUser struct {
	after time.Duration
	done  chan struct{}
	asked chan struct{}
}

func (u *slowUser) Elicit(ctx context.Context, _ mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	u.asked <- struct{}{}
	select {
	case <-u.done:
	case <-time.After(u.after):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	res := &mcp.ElicitationResult{}
	res.Action = mcp.ElicitationResponseActionAccept
	res.Content = map[string]any{"confirm": true}
	return res, nil
}

// confirmServer serves a tool that confirms, on an Elicitor with cfg;
// errs receives the handler's errors.
func confirmServer(t *testing.T, cfg *elicit.Config) (string, *elicit.Elicitor, chan error) {
	t.Helper()
	ev, m, f := newFrontEnd(t, cfg)
	errs := make(chan error, 1)
	m.AddTool(mcp.NewTool("confirm"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ok, err := elicit.Confirm(ctx, "OK?")
		if err != nil {
			errs <- err
			return nil, err
		}
		if !ok {
			return mcp.NewToolResultText("no"), nil
		}
		return mcp.NewToolResultText("yes"), nil
	})
	srv := httptest.NewServer(f.Handler(nil))
	t.Cleanup(srv.Close)
	return srv.URL + elicit.MCPPath, ev, errs
}

// A blocking elicitation reports progress to a client that asked for it.
func TestProgressWhileWaiting(t *testing.T) {
	url, ev, _ := confirmServer(t, &elicit.Config{ProgressInterval: 50 * time.Millisecond})
	defer ev.Close()
	// The user answers once the client has two progress notifications,
	// or after five seconds without them.
	u := &slowUser{after: 5 * time.Second, done: make(chan struct{}), asked: make(chan struct{}, 1)}
	c := dialWith(t, url, "2025-11-25", u)
	var mu sync.Mutex
	progress := 0
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" && n.Params.AdditionalFields["progressToken"] == "p1" {
			mu.Lock()
			progress++
			if progress == 2 {
				close(u.done)
			}
			mu.Unlock()
		}
	})
	req := mcp.CallToolRequest{}
	req.Params.Name = "confirm"
	req.Params.Meta = &mcp.Meta{ProgressToken: "p1"}
	if _, err := c.CallTool(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if progress < 2 {
		t.Fatalf("%d progress notifications while the user read the question", progress)
	}
}

// Closing the Elicitor ends a call that waits for the user.
func TestCloseEndsWait(t *testing.T) {
	url, ev, errs := confirmServer(t, nil)
	u := &slowUser{after: time.Hour, asked: make(chan struct{}, 1)}
	c := dialWith(t, url, "2025-11-25", u)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "confirm"
		c.CallTool(context.Background(), req)
	}()
	<-u.asked
	ev.Close()
	fronttest.RecvErr(t, errs, elicit.ErrClosed, "the wait's end on Close")
}

// The fallback tool is listed to a client that lacks a mode, and only to
// it.
func TestFallbackToolListed(t *testing.T) {
	url, ev, _ := confirmServer(t, &elicit.Config{Fallbacks: []elicit.Fallback{elicit.LLMMediated}})
	defer ev.Close()
	for _, tc := range []struct {
		name string
		caps *mcp.ElicitationCapability
		want bool
	}{
		{"form and url", &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}}, false},
		{"form alone", &mcp.ElicitationCapability{}, true},
		{"none", nil, true},
	} {
		for _, v := range versions {
			c, _ := mcpgo.StartClient(t, url, nil, v, mcpclient.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: tc.caps}))
			res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			listed := false
			for _, tool := range res.Tools {
				listed = listed || tool.Name == "sendElicitationResult"
			}
			if listed != tc.want {
				t.Errorf("%s, %s: listed %v, want %v", tc.name, v, listed, tc.want)
			}
			c.Close()
		}
	}
}

// The end of a 2025-11-25 session (its DELETE) ends the calls that wait
// in it.
func TestSessionEndEndsWait(t *testing.T) {
	url, ev, errs := confirmServer(t, nil)
	defer ev.Close()
	u := &slowUser{after: time.Hour, asked: make(chan struct{}, 1)}
	c, tr := mcpgo.StartClient(t, url, nil, "2025-11-25",
		mcpclient.WithClientCapabilities(mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}}),
		mcpclient.WithElicitationHandler(u))
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "confirm"
		c.CallTool(context.Background(), req)
	}()
	<-u.asked
	del, _ := http.NewRequest(http.MethodDelete, url, nil)
	del.Header.Set("Mcp-Session-Id", tr.GetSessionId())
	if res, err := http.DefaultClient.Do(del); err != nil {
		t.Fatal(err)
	} else {
		res.Body.Close()
	}
	fronttest.RecvErr(t, errs, elicit.ErrSessionEnded, "the wait's end with the session")
}
