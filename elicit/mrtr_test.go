package elicit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type count struct {
	N int `json:"n"`
}

// A handler with two elicitations runs three times on 2026-07-28 (once per
// round) and sees both answers, in order; on 2025-11-25 it runs once.
func TestRoundsRerunHandler(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		e := newEnv(t, nil)
		var runs atomic.Int32
		e.tool("two", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
			runs.Add(1)
			a, err := elicit.Form[count](ctx, req, "first")
			if err != nil {
				return "", err
			}
			ok, err := elicit.Confirm(ctx, req, fmt.Sprintf("really %d?", a.Content.N))
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%d %v", a.Content.N, ok), nil
		})
		cs := e.connect(&mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Message == "first" {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"n": 7}}, nil
			}
			if req.Params.Message != "really 7?" {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
		}}, version)
		got, isErr := call(t, cs, "two")
		if isErr || got != "7 true" {
			t.Fatalf("got %q (error %v)", got, isErr)
		}
		want := int32(1)
		if version == mrtr {
			want = 3
		}
		if n := runs.Load(); n != want {
			t.Errorf("handler ran %d times, want %d", n, want)
		}
		e.assertEmpty()
	})
}

// manual drives the rounds of a 2026-07-28 call by hand.
type manual struct {
	t  *testing.T
	cs *mcp.ClientSession
}

func (e *env) manual() *manual {
	return &manual{e.t, e.connect(&mcp.ClientOptions{
		ElicitationHandler: answer("cancel", nil),
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
	}, mrtr)}
}

func (m *manual) call(p *mcp.CallToolParams) *mcp.CallToolResult {
	m.t.Helper()
	res, err := m.cs.CallTool(context.Background(), p)
	if err != nil {
		m.t.Fatal(err)
	}
	return res
}

func (m *manual) respond(first *mcp.CallToolResult, res *mcp.ElicitResult) mcp.InputResponseMap {
	m.t.Helper()
	if !first.NeedsInput() || len(first.InputRequests) != 1 {
		m.t.Fatalf("not an input-required result: %+v", first)
	}
	out := mcp.InputResponseMap{}
	for k := range first.InputRequests {
		out[k] = res
	}
	return out
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestRequestStateBinding(t *testing.T) {
	e := newEnv(t, nil)
	var last error
	mcp.AddTool(e.server, &mcp.Tool{Name: "set"}, func(ctx context.Context, req *mcp.CallToolRequest, in count) (*mcp.CallToolResult, any, error) {
		ok, err := elicit.Confirm(ctx, req, fmt.Sprintf("set %d?", in.N))
		last = err
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(ok)}}}, nil, nil
	})
	m := e.manual()
	yes := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}

	first := m.call(&mcp.CallToolParams{Name: "set", Arguments: map[string]any{"n": 1}})
	if first.RequestState == "" || !strings.HasPrefix(first.RequestState, "ev1.") {
		t.Fatalf("requestState %q", first.RequestState)
	}
	resp := m.respond(first, yes)

	// Other arguments: refused.
	other := m.call(&mcp.CallToolParams{Name: "set", Arguments: map[string]any{"n": 2}, InputResponses: resp, RequestState: first.RequestState})
	if !other.IsError || !errors.Is(last, elicit.ErrUnknownElicitation) {
		t.Errorf("other arguments: %q, %v", text(other), last)
	}

	// A tampered requestState: refused.
	first = m.call(&mcp.CallToolParams{Name: "set", Arguments: map[string]any{"n": 1}})
	resp = m.respond(first, yes)
	tampered := first.RequestState[:len(first.RequestState)-2] + "AA"
	if tampered == first.RequestState {
		tampered = first.RequestState[:len(first.RequestState)-2] + "BB"
	}
	bad := m.call(&mcp.CallToolParams{Name: "set", Arguments: map[string]any{"n": 1}, InputResponses: resp, RequestState: tampered})
	if !bad.IsError || !errors.Is(last, elicit.ErrUnknownElicitation) {
		t.Errorf("tampered: %q, %v", text(bad), last)
	}

	// The real one, with the arguments re-encoded: accepted, once.
	good := m.call(&mcp.CallToolParams{Name: "set", Arguments: map[string]any{"n": 1.0}, InputResponses: resp, RequestState: first.RequestState})
	if good.IsError || text(good) != "true" {
		t.Errorf("good: %q, %v", text(good), last)
	}
	replay := m.call(&mcp.CallToolParams{Name: "set", Arguments: map[string]any{"n": 1}, InputResponses: resp, RequestState: first.RequestState})
	if !replay.IsError || !errors.Is(last, elicit.ErrUnknownElicitation) {
		t.Errorf("replay: %q, %v", text(replay), last)
	}
}

// A handler that asks something else when it runs again does not get the
// answer to what it asked before.
func TestRoundsQuestionChanged(t *testing.T) {
	e := newEnv(t, nil)
	var runs atomic.Int32
	var last error
	e.tool("fickle", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		n := runs.Add(1)
		ok, err := elicit.Confirm(ctx, req, fmt.Sprintf("delete account %d?", n))
		last = err
		return fmt.Sprint(ok), err
	})
	m := e.manual()
	first := m.call(&mcp.CallToolParams{Name: "fickle"})
	second := m.call(&mcp.CallToolParams{Name: "fickle", RequestState: first.RequestState,
		InputResponses: m.respond(first, &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}})})
	if !second.IsError || !errors.Is(last, elicit.ErrUnknownElicitation) {
		t.Errorf("got %q, %v", text(second), last)
	}
}

// A requestState that is not ours (another library's) is left alone.
func TestForeignRequestState(t *testing.T) {
	e := newEnv(t, nil)
	var sawState string
	e.tool("other", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		sawState = req.Params.RequestState
		return "ok", nil
	})
	m := e.manual()
	res := m.call(&mcp.CallToolParams{Name: "other", RequestState: "opaque-other"})
	if res.IsError || sawState != "opaque-other" {
		t.Errorf("got %q, state %q", text(res), sawState)
	}
}
