package elicit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A pending record is bounded (Config.MaxPendingSize): a call whose
// arguments would make it larger is refused before anything is written.
func TestModelPendingSizeBound(t *testing.T) {
	e := newEnv(t, &elicit.Config{Fallbacks: []elicit.Fallback{elicit.LLMMediated}, MaxPendingSize: 4 << 10})
	mcp.AddTool(e.server, &mcp.Tool{Name: "big"}, func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
		text, err := profileTool(ctx, req)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
	cs := e.connect(mute, legacy)
	pendingOf(t, callTool(t, cs, "big", map[string]any{"note": "small"}))
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "big", Arguments: map[string]any{"note": strings.Repeat("x", 8<<10)}})
	if msg := errText(res, err); err == nil && !res.IsError || !strings.Contains(msg, elicit.ErrTooLarge.Error()) {
		t.Fatalf("a pending record over the bound: %q", msg)
	}
	entries, _, _ := e.store.Scan(context.Background(), "", 100)
	for _, en := range entries {
		if len(en.Value) > 4<<10+512 {
			t.Errorf("a %d-byte record in the store", len(en.Value))
		}
	}
}

// What a session left pending (an LLM-mediated elicitation nothing waits
// for) is deleted when the session ends, not kept for the TTL.
func TestModelPendingDeletedAtSessionEnd(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e := newEnv(t, llmConfig)
		e.counted("profile")
		cs := e.connect(mute, version)
		pendingOf(t, callTool(t, cs, "profile", nil))
		if entries, _, _ := e.store.Scan(context.Background(), "", 100); len(entries) == 0 {
			t.Fatal("nothing pending in the store")
		}
		cs.Close()
		e.assertEmpty()
	})
}

// A DELETE of a Streamable HTTP session ends its waiting tool at once
// (ErrSessionEnded) instead of hanging until the TTL.
func TestDeleteEndsWaitingTool(t *testing.T) {
	e := newEnv(t, &elicit.Config{TTL: time.Minute})
	ended := make(chan error, 1)
	e.tool("profile", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		_, err := elicit.Form[profile](ctx, "Your profile?", withProfile)
		ended <- err
		return "", err
	})
	h := e.ev.EndSessionOnDelete(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return e.server }, nil))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	asked := make(chan struct{}, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- struct{}{}
			<-ctx.Done() // the user never answers
			return nil, ctx.Err()
		},
	})
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL}, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
	if err != nil {
		t.Fatal(err)
	}
	go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "profile"})
	<-asked
	req, _ := http.NewRequest(http.MethodDelete, srv.URL, nil)
	req.Header.Set("Mcp-Session-Id", cs.ID())
	deleted := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			deleted <- 0
			return
		}
		resp.Body.Close()
		deleted <- resp.StatusCode
	}()
	fronttest.RecvErr(t, ended, elicit.ErrSessionEnded, "the waiting tool's end after DELETE")
	select {
	case code := <-deleted:
		if code != http.StatusNoContent {
			t.Errorf("DELETE: %d", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("DELETE hangs")
	}
	cs.Close()
	e.assertEmpty()
}

// A Streamable HTTP session abandoned with an elicitation pending closes
// after the idle timeout (StreamableHTTPOptions.SessionTimeout, which
// serve sets), and what it left pending is deleted with it.
func TestIdleSessionEnds(t *testing.T) {
	e := newEnv(t, llmConfig)
	e.counted("profile")
	closed := make(chan struct{})
	h := e.ev.EndSessionOnDelete(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return e.server }, &mcp.StreamableHTTPOptions{SessionTimeout: 300 * time.Millisecond}))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	e.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				ss := req.GetSession().(*mcp.ServerSession)
				go func() { ss.Wait(); close(closed) }()
			}
			return next(ctx, method, req)
		}
	})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
	if err != nil {
		t.Fatal(err)
	}
	pendingOf(t, callTool(t, cs, "profile", nil))
	// The client goes away without a DELETE.
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the idle session did not close")
	}
	e.assertEmpty()
}
