package elicit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/internal/testclock"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
			a, err := elicit.Form[count](ctx, "first")
			if err != nil {
				return "", err
			}
			ok, err := elicit.Confirm(ctx, fmt.Sprintf("really %d?", a.Content.N))
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

// manualBoth is manual from a client that declares both modes.
func (e *env) manualBoth() *manual {
	return &manual{e.t, e.connect(&mcp.ClientOptions{
		Capabilities:       bothModes,
		ElicitationHandler: answer("cancel", nil),
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
	}, mrtr)}
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

// text is the text of a tool result.
var text = fronttest.Text

// A requestState that does not verify is the JSON-RPC error -32602
// (invalid params), before the handler runs, and leaves nothing behind:
// other arguments, another tool, another session, tampered, replayed,
// expired.
func TestRequestStateRefused(t *testing.T) {
	clock := new(testclock.Clock)
	e := newEnv(t, &elicit.Config{Clock: clock.Now})
	var runs atomic.Int32
	handler := func(ctx context.Context, req *mcp.CallToolRequest, in count) (*mcp.CallToolResult, any, error) {
		runs.Add(1)
		var opts []elicit.Option
		if in.N == 3 {
			opts = append(opts, elicit.WithTTL(time.Second)) // for the expiry
		}
		ok, err := elicit.Confirm(ctx, fmt.Sprintf("set %d?", in.N), opts...)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(ok)}}}, nil, nil
	}
	mcp.AddTool(e.server, &mcp.Tool{Name: "set"}, handler)
	mcp.AddTool(e.server, &mcp.Tool{Name: "set2"}, handler)
	m, other := e.manual(), e.manual()
	yes := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}
	one := map[string]any{"n": 1}

	refused := func(name string, cs *mcp.ClientSession, p *mcp.CallToolParams) {
		t.Helper()
		badState(t, &runs, name, cs, p)
		e.assertEmpty()
	}
	first := m.call(&mcp.CallToolParams{Name: "set", Arguments: one})
	if !strings.HasPrefix(first.RequestState, "ev2.") {
		t.Fatalf("requestState %q", first.RequestState)
	}
	resp := m.respond(first, yes)
	retry := func(name string, args any, state string) *mcp.CallToolParams {
		return &mcp.CallToolParams{Name: name, Arguments: args, InputResponses: resp, RequestState: state}
	}
	refused("other arguments", m.cs, retry("set", map[string]any{"n": 2}, first.RequestState))
	refused("another tool", m.cs, retry("set2", one, first.RequestState))
	refused("another session", other.cs, retry("set", one, first.RequestState))
	refused("tampered", m.cs, retry("set", one, first.RequestState+"-TAMPERED"))
	last := first.RequestState[len(first.RequestState)-1]
	flip := first.RequestState[:len(first.RequestState)-1] + map[bool]string{true: "B", false: "A"}[last == 'A']
	refused("a flipped character", m.cs, retry("set", one, flip))

	// Refusals consumed nothing: the real one, with the arguments
	// re-encoded, is accepted once.
	good := m.call(retry("set", map[string]any{"n": 1.0}, first.RequestState))
	if good.IsError || text(good) != "true" {
		t.Errorf("good: %q", text(good))
	}
	refused("replayed", m.cs, retry("set", one, first.RequestState))

	three := map[string]any{"n": 3}
	second := m.call(&mcp.CallToolParams{Name: "set", Arguments: three})
	resp = m.respond(second, yes)
	clock.Advance(2100 * time.Millisecond) // past the 1 s TTL on the Elicitor's clock
	refused("expired", m.cs, retry("set", three, second.RequestState))
}

// badState checks that the call p is refused as a requestState that does
// not verify, -32602, before the handler (counted by runs) runs.
func badState(t *testing.T, runs *atomic.Int32, name string, cs *mcp.ClientSession, p *mcp.CallToolParams) {
	t.Helper()
	before := runs.Load()
	res, err := cs.CallTool(context.Background(), p)
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, "requestState") {
		t.Errorf("%s: got %+v, %v; want the JSON-RPC error -32602", name, res, err)
	}
	if runs.Load() != before {
		t.Errorf("%s: the handler ran", name)
	}
}

// A round whose inputResponses lack the answer asks the question again,
// with a new requestState; the old one is used up.
func TestRoundWithoutAnswerAsksAgain(t *testing.T) {
	e := newEnv(t, nil)
	var runs atomic.Int32
	e.tool("ask", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		runs.Add(1)
		ok, err := elicit.Confirm(ctx, "go on?")
		return fmt.Sprint(ok), err
	})
	m := e.manual()
	first := m.call(&mcp.CallToolParams{Name: "ask"})
	resp := m.respond(first, &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}})
	for name, p := range map[string]*mcp.CallToolParams{
		"no inputResponses": {Name: "ask", RequestState: first.RequestState},
		"another key":       {Name: "ask", RequestState: "", InputResponses: mcp.InputResponseMap{"other": &mcp.ElicitResult{Action: "accept"}}},
	} {
		if p.RequestState == "" {
			first = m.call(&mcp.CallToolParams{Name: "ask"})
			p.RequestState = first.RequestState
		}
		again := m.call(p)
		if !again.NeedsInput() || len(again.InputRequests) != 1 || again.RequestState == "" || again.RequestState == p.RequestState {
			t.Fatalf("%s: got %+v, want the question again", name, again)
		}
		_, err := m.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask", RequestState: p.RequestState, InputResponses: resp})
		if err == nil {
			t.Errorf("%s: the first requestState was accepted again", name)
		}
		done := m.call(&mcp.CallToolParams{Name: "ask", RequestState: again.RequestState, InputResponses: m.respond(again, &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}})})
		if done.IsError || text(done) != "true" {
			t.Errorf("%s: got %q", name, text(done))
		}
	}
	e.assertEmpty()
}

// An answer of another kind than the question (a sampling result for an
// elicitation) is invalid params naming the key, before the handler runs.
func TestInputResponseOfAnotherKind(t *testing.T) {
	e := newEnv(t, nil)
	var runs atomic.Int32
	e.tool("ask", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		runs.Add(1)
		ok, err := elicit.Confirm(ctx, "go on?", elicit.WithInputKey("go_on"))
		return fmt.Sprint(ok), err
	})
	m := e.manual()
	first := m.call(&mcp.CallToolParams{Name: "ask"})
	if _, ok := first.InputRequests["go_on"]; !ok {
		t.Fatalf("input requests %v, want the key go_on", first.InputRequests)
	}
	//lint:ignore SA1019 a response of another (deprecated) kind is the point
	roots := &mcp.ListRootsResult{}
	_, err := m.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask", RequestState: first.RequestState,
		InputResponses: mcp.InputResponseMap{"go_on": roots}})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, `"go_on"`) {
		t.Errorf("got %v, want -32602 naming go_on", err)
	}
	if runs.Load() != 1 {
		t.Errorf("the handler ran %d times, want 1", runs.Load())
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
		ok, err := elicit.Confirm(ctx, fmt.Sprintf("delete account %d?", n))
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

// A URL-mode elicitation asked again, for a round without its answer,
// leaves nothing of the first asking behind.
func TestURLAskedAgainLeavesNothing(t *testing.T) {
	e := newEnv(t, nil)
	srv := e.callback()
	e.tool("connect", urlTool(srv.URL))
	m := e.manualBoth()
	first := m.call(&mcp.CallToolParams{Name: "connect"})
	again := m.call(&mcp.CallToolParams{Name: "connect", RequestState: first.RequestState})
	if !again.NeedsInput() || again.RequestState == first.RequestState {
		t.Fatalf("got %+v, want the question again", again)
	}
	for _, ir := range first.InputRequests {
		if p, ok := ir.(*mcp.ElicitParams); !ok || p.URL == "" {
			t.Fatalf("first input request %+v", ir)
		} else if s := get(t, p.URL); s == http.StatusOK {
			t.Errorf("the first link still answers: %d", s)
		}
	}
	done := m.call(&mcp.CallToolParams{Name: "connect", RequestState: again.RequestState,
		InputResponses: m.respond(again, &mcp.ElicitResult{Action: "decline"})})
	if text(done) != "decline" {
		t.Errorf("got %q", text(done))
	}
	e.assertEmpty()
}
