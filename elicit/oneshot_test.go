package elicit_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// partitioned applies the next PutIfAbsent and reports it failed, and
// fails the reads that follow until healed: a partition that starts
// after the marker's write reached the store.
type partitioned struct {
	store.Store
	armed, cut atomic.Bool
}

func (p *partitioned) PutIfAbsent(ctx context.Context, k string, v []byte, e time.Time) (bool, error) {
	ok, err := p.Store.PutIfAbsent(ctx, k, v, e)
	if p.armed.CompareAndSwap(true, false) {
		p.cut.Store(true)
		return false, errors.New("read tcp: i/o timeout")
	}
	return ok, err
}

func (p *partitioned) Get(ctx context.Context, k string) ([]byte, error) {
	if p.cut.Load() {
		return nil, errors.New("read tcp: i/o timeout")
	}
	return p.Store.Get(ctx, k)
}

func (p *partitioned) CompareAndSwap(ctx context.Context, k string, old, v []byte, e time.Time) (bool, error) {
	if p.cut.Load() {
		return false, errors.New("read tcp: i/o timeout")
	}
	return p.Store.CompareAndSwap(ctx, k, old, v, e)
}

// The same answer sent again (its reply lost) gets the tool's result again,
// marked as a replay; the tool does not run twice. Another answer is
// refused.
func TestModelResendGetsSameResult(t *testing.T) {
	forBoth(t, func(t *testing.T, version string) {
		_, cs, p, runs := modelProfile(t, version)
		answer := map[string]any{"name": "Ann", "email": "ann@example.com"}
		first := submit(t, cs, p.ID, "accept", answer)
		if first.IsError {
			t.Fatalf("first: %q", text(first))
		}
		again := submit(t, cs, p.ID, "accept", map[string]any{"email": "ann@example.com", "name": "Ann"})
		if again.IsError || text(again) != text(first) || again.Meta[elicit.MetaElicitationReplayed] != true {
			t.Fatalf("the same answer again: %q %v (error %v)", text(again), again.Meta, again.IsError)
		}
		if other := submit(t, cs, p.ID, "accept", map[string]any{"name": "Bob", "email": "bob@example.com"}); !other.IsError {
			t.Fatalf("another answer: %q", text(other))
		}
		if n := runs.Load(); n != 2 {
			t.Errorf("handler ran %d times, want 2", n)
		}
	})
}

// A partition right after the marker's write: the answer fails with a
// store error and is not used up; resent after the claim's lease, it
// continues the tool, once.
//
// It runs in a synctest bubble: the lease passes on the bubble's clock,
// at once.
func TestModelAnswerAfterPartition(t *testing.T) {
	synctest.Test(t, testModelAnswerAfterPartition)
}

func testModelAnswerAfterPartition(t *testing.T) {
	st := &partitioned{Store: memory.New(nil)}
	defer st.Close()
	keys := newKeyring(t)
	e := newEnvOn(t, st, llmConfig, keys)
	runs := e.counted("profile")
	cs := e.connect(mute, legacy)
	p := pendingOf(t, callTool(t, cs, "profile", nil))
	answer := map[string]any{"name": "Ann", "email": "ann@example.com"}
	st.armed.Store(true)
	res, err := cs.CallTool(context.Background(), fallbackParams(p.ID, answer))
	if err == nil && !res.IsError {
		t.Fatalf("answered during a partition: %q", text(res))
	}
	st.cut.Store(false)
	res = submit(t, cs, p.ID, "accept", answer)
	if !res.IsError || !strings.Contains(text(res), elicit.ErrAnswerInProgress.Error()) {
		t.Fatalf("during the lease: %q", text(res))
	}
	time.Sleep(elicit.ClaimLease + time.Millisecond)
	res = submit(t, cs, p.ID, "accept", answer)
	if res.IsError {
		t.Fatalf("resent after the partition: %q", text(res))
	}
	if n := runs.Load(); n != 2 {
		t.Errorf("handler ran %d times, want 2", n)
	}
}

func fallbackParams(id string, content map[string]any) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: elicit.FallbackTool, Arguments: map[string]any{"elicitId": id, "action": "accept", "content": content}}
}

// failSubscribe fails the next Subscribe when armed.
type failSubscribe struct {
	store.Store
	armed atomic.Bool
}

func (f *failSubscribe) Subscribe(ctx context.Context, ch string) (store.Subscription, error) {
	if f.armed.CompareAndSwap(true, false) {
		return nil, errors.New("dial tcp: connection refused")
	}
	return f.Store.Subscribe(ctx, ch)
}

// On 2026-07-28 a requestState is used up only when the handler receives
// its answer: a run that fails before (here the wait for a URL-mode
// callback cannot subscribe) gives it back, and the client's resend of
// the same requestState completes the call, once.
func TestRequestStateKeptAfterStoreFault(t *testing.T) {
	st := &failSubscribe{Store: memory.New(nil)}
	t.Cleanup(func() { st.Close() })
	keys := newKeyring(t)
	e := newEnvOn(t, st, nil, keys)
	elicit.SetTakenWait(e.ev, 100*time.Millisecond) // the page's answer waits for the retry
	srv := e.callback()
	var got atomic.Int32
	e.tool("connect", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		a, err := urlTool(srv.URL)(ctx, req)
		if err == nil {
			got.Add(1)
		}
		return a, err
	})
	m := e.manualBoth()
	first := m.call(&mcp.CallToolParams{Name: "connect"})
	var link string
	for _, r := range first.InputRequests {
		if p, ok := r.(*mcp.ElicitParams); ok {
			link = p.URL
		}
	}
	if link == "" {
		t.Fatalf("no URL-mode input request: %+v", first)
	}
	if code := get(t, link); code != 200 {
		t.Fatalf("consent page: %d", code)
	}
	resp := m.respond(first, &mcp.ElicitResult{Action: "accept"})
	st.armed.Store(true)
	if res, err := m.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "connect", InputResponses: resp, RequestState: first.RequestState}); err == nil && !res.IsError {
		t.Fatalf("completed during the fault: %q", text(res))
	}
	res := m.call(&mcp.CallToolParams{Name: "connect", InputResponses: resp, RequestState: first.RequestState})
	if res.IsError || text(res) != "accept" {
		t.Fatalf("the same requestState resent: %q (error %v)", text(res), res.IsError)
	}
	if again, err := m.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "connect", InputResponses: resp, RequestState: first.RequestState}); err == nil && !again.IsError {
		t.Fatalf("a third send: %q", text(again))
	}
	if n := got.Load(); n != 1 {
		t.Errorf("the handler got the answer %d times", n)
	}
}
