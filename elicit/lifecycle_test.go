package elicit_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A handler that turns the elicitation's error into a tool error result of
// its own (a common Go habit) must still get its question asked on
// 2026-07-28, where the question travels in the result; the Elicitor
// logs a warning. Before the middleware owned the stop, the client got
// the handler's error result and was never asked.
func TestSwallowedStop(t *testing.T) {
	var logs fronttest.LockedBuffer
	e := newEnv(t, &elicit.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	mcp.AddTool(e.server, &mcp.Tool{Name: "swallow"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		ok, err := elicit.Confirm(ctx, "Delete 47 contacts?")
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "failed: " + err.Error()}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: map[bool]string{true: "deleted", false: "kept"}[ok]}}}, nil, nil
	})
	forBoth(t, func(t *testing.T, version string) {
		asked := 0
		cs := e.connect(&mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked++
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
		}}, version)
		got, isErr := call(t, cs, "swallow")
		if isErr || got != "deleted" || asked != 1 {
			t.Fatalf("got %q (error %v), asked %d times", got, isErr, asked)
		}
	})
	if !strings.Contains(logs.String(), "did not return the error of an elicitation") {
		t.Fatalf("no warning logged: %q", logs.String())
	}
	if strings.Contains(logs.String(), "Delete 47") {
		t.Fatalf("the warning quotes the question: %q", logs.String())
	}
}

// Close ends a waiting elicitation at once: the handler gets ErrClosed
// and the client's request is cancelled, long before the TTL.
func TestCloseEndsWaits(t *testing.T) {
	e := newEnv(t, &elicit.Config{TTL: time.Minute})
	handlerErr := make(chan error, 1)
	e.tool("wait", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		_, err := elicit.Confirm(ctx, "Proceed?")
		handlerErr <- err
		return "", err
	})
	asked := make(chan struct{})
	cancelled := make(chan struct{})
	cs := e.connect(&mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		close(asked)
		<-ctx.Done() // the user never answers; the server cancels
		close(cancelled)
		return nil, ctx.Err()
	}}, legacy)
	go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait"})
	waitFor(t, asked, "the question")

	start := time.Now()
	if err := e.ev.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %v", d)
	}
	if err := <-handlerErr; !errors.Is(err, elicit.ErrClosed) {
		t.Fatalf("handler got %v, want ErrClosed", err)
	}
	waitFor(t, cancelled, "the client's request to be cancelled")

	// A call after Close is refused with the same error.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait"})
	if err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("call after Close: %v, %v", res, err)
	}
}

// While an elicitation waits, a call with a progress token receives
// progress notifications, so that a client which resets its request
// timeout on progress keeps waiting for the user.
func TestProgressWhileWaiting(t *testing.T) {
	e := newEnv(t, &elicit.Config{ProgressInterval: 20 * time.Millisecond})
	e.tool("slow", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		ok, err := elicit.Confirm(ctx, "Proceed?")
		if err != nil {
			return "", err
		}
		return map[bool]string{true: "yes", false: "no"}[ok], nil
	})
	var mu sync.Mutex
	var progress []float64
	enough := make(chan struct{})
	cs := e.connect(&mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			if r.Params.ProgressToken != "tok-1" {
				t.Errorf("progress for token %v", r.Params.ProgressToken)
			}
			progress = append(progress, r.Params.Progress)
			if len(progress) == 3 {
				close(enough)
			}
		},
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			select {
			case <-enough: // the user answers after three notifications
			case <-time.After(10 * time.Second):
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
		},
	}, legacy)
	p := &mcp.CallToolParams{Name: "slow"}
	p.SetProgressToken("tok-1")
	res, err := cs.CallTool(context.Background(), p)
	if err != nil || res.IsError {
		t.Fatalf("%v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(progress) < 3 {
		t.Fatalf("%d progress notifications, want at least 3", len(progress))
	}
	for i := 1; i < len(progress); i++ {
		if progress[i] <= progress[i-1] {
			t.Fatalf("progress does not increase: %v", progress)
		}
	}
}
